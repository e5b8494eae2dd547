// The dashboard's browser tests: headless Chromium driven by playwright-core against a
// running, seeded server. Run by the server's Rust test `dashboard` (which seeds the server
// and writes the fixture), or by hand:
//   node ui/tests/browser.mjs fixture.json
// The fixture names the server, where to save screenshots and what was seeded. Exits 0 when
// every check holds; prints one line per check.
import { readFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const require = createRequire(import.meta.url);
const fx = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const AXE = require.resolve('axe-core/axe.min.js');
mkdirSync(fx.out, { recursive: true });

let failed = 0;
function check(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failed += 1;
}

async function api(base, method, path, { body, key } = {}) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (key) headers.Authorization = `Bearer ${key}`;
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

const browser = await chromium.launch({
  executablePath: fx.chromium,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
// axe-core is injected as a script: the page's own policy allows only its own scripts.
const context = await browser.newContext({ bypassCSP: true, viewport: { width: 1400, height: 1000 } });
const page = await context.newPage();
const errors = [];
page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
page.on('pageerror', (e) => errors.push(String(e)));

// Loads a page, waits for `ready`, then checks console errors and accessibility and saves a
// screenshot.
async function visit(name, path, ready) {
  errors.length = 0;
  await page.goto(fx.base + path);
  try {
    await ready();
  } catch (e) {
    check(false, `${name}: ready (${e.message.split('\n')[0]})`);
  }
  await page.waitForLoadState('networkidle');
  await page.screenshot({ path: join(fx.out, `${name}.png`), fullPage: true });
  await page.addScriptTag({ path: AXE });
  const axe = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const bad = axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  for (const v of bad) console.log(`     axe ${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')})`);
  check(bad.length === 0, `${name}: no serious or critical accessibility violations (${axe.violations.length} minor)`);
  check(errors.length === 0, `${name}: no console errors${errors.length ? `: ${errors.join(' | ')}` : ''}`);
}

const row = (t) => page.locator('table tbody tr', { hasText: t }).first();

// /ui opens on the memories page.
await page.goto(`${fx.base}/ui`);
await page.getByRole('heading', { name: 'Memories', level: 1 }).waitFor();
check(true, '/ui opens on the memories page');

// Memories: the list, then a full-text search through the form.
await visit('memories', `/ui/memories?user_id=${encodeURIComponent(fx.user)}`, () => row(fx.listed).waitFor());
await page.getByLabel('Search', { exact: true }).fill(fx.search.query);
await page.getByRole('button', { name: 'Apply' }).click();
await row(fx.search.expect).waitFor().then(() => check(true, `search "${fx.search.query}" finds "${fx.search.expect}"`),
  (e) => check(false, `search finds the memory (${e.message.split('\n')[0]})`));
check(new URL(page.url()).searchParams.get('q') === fx.search.query, 'the search is in the address');
await page.getByLabel('Search by').selectOption('semantic');
await page.getByRole('button', { name: 'Apply' }).click();
await row(fx.search.expect).waitFor().then(() => check(true, 'the semantic search finds it too'),
  (e) => check(false, `semantic search (${e.message.split('\n')[0]})`));
await page.getByText('results by score').waitFor()
  .then(async () => check(await page.getByText('best match').count() === 0, 'search results are labelled by score, not as best matches'),
    async (e) => check(false, `search results labelled by score (${e.message.split('\n')[0]}; the label says `
      + `"${await page.locator('section.list .row span').first().textContent()}")`));
// (The list's rows, still shown while a search loads, have no score: a search from the form
// once threw there and never ran.)
check(errors.length === 0, `searching from the form raises no error (${errors.join('; ')})`);

// Listing by importance: the order the API gives, chosen in the form (after the searches'
// accesses, which order ties, are written: within a quarter of a second).
await page.waitForTimeout(600);
await page.goto(`${fx.base}/ui/memories?user_id=${encodeURIComponent(fx.user)}`);
await row(fx.listed).waitFor();
await page.getByLabel('Order').selectOption('importance');
await page.getByRole('button', { name: 'Apply' }).click();
const byImportance = (await api(fx.base, 'GET', `/v1/memories?user_id=${encodeURIComponent(fx.user)}&order=importance&limit=50`)).body.items;
await page.waitForFunction((n) => new URL(location.href).searchParams.get('order') === 'importance'
  && document.querySelectorAll('table tbody tr').length === n, byImportance.length).catch(() => {});
const shown = await page.locator('table tbody tr input[type=checkbox]').evaluateAll((boxes) => boxes.map((b) => b.getAttribute('aria-label').replace('select ', '')));
check(byImportance.length > 1 && shown.join() === byImportance.map((m) => m.id).join(),
  `the list follows order=importance (${shown.length} rows)`);

// Edit through the detail view; the API has the new text.
await page.goto(`${fx.base}/ui/memories?user_id=${encodeURIComponent(fx.user)}&id=${fx.edit.id}`);
await page.getByRole('button', { name: 'Edit' }).click();
await page.getByLabel('Content').fill(fx.edit.content);
await page.getByRole('button', { name: 'Save' }).click();
await page.getByText('Saved.').waitFor();
let got = await api(fx.base, 'GET', `/v1/memories/${fx.edit.id}`);
check(got.status === 200 && got.body.content === fx.edit.content, 'an edit takes effect in the API');
got = await api(fx.base, 'GET', `/v1/memories/${fx.edit.id}/history`);
check(got.status === 200 && got.body.history.some((e) => e.actor === 'dashboard' && e.new === fx.edit.content),
  'the edit is in the memory\'s history, made by the dashboard');
await page.locator('.history li', { hasText: 'dashboard' }).waitFor()
  .then(() => check(true, 'the page shows the edit in the history'), () => check(false, 'the page shows the edit in the history'));
await page.screenshot({ path: join(fx.out, 'memory-detail.png'), fullPage: true });

// Delete, confirmed in a dialog; first cancelled.
await page.goto(`${fx.base}/ui/memories?user_id=${encodeURIComponent(fx.user)}&id=${fx.delete_id}`);
await page.locator('.detail').getByRole('button', { name: 'Delete' }).click();
await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
await page.locator('.detail').getByRole('button', { name: 'Delete' }).click();
await page.waitForFunction(() => document.activeElement && document.activeElement.closest('[role=dialog]'), null, { timeout: 5000 })
  .then(() => check(true, 'the confirmation dialog takes the focus'), () => check(false, 'the confirmation dialog takes the focus'));
await page.keyboard.press('Escape');
await page.getByRole('dialog').waitFor({ state: 'detached' });
got = await api(fx.base, 'GET', `/v1/memories/${fx.delete_id}`);
check(got.status === 200, 'a delete cancelled (by the button, then by Escape) deletes nothing');
await page.locator('.detail').getByRole('button', { name: 'Delete' }).click();
await page.screenshot({ path: join(fx.out, 'confirm-delete.png') });
await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
await page.getByRole('dialog').waitFor({ state: 'detached' });
got = await api(fx.base, 'GET', `/v1/memories/${fx.delete_id}`);
check(got.status === 404, 'a confirmed delete takes effect in the API');

// An API error is a message, not a blank page.
await page.goto(`${fx.base}/ui/memories?scope=declarative`);
const alert = page.getByRole('alert').first();
await alert.waitFor().then(async () => check((await alert.textContent()).includes('conflicting_fields'),
  'an API error is shown as a message'), (e) => check(false, `error shown (${e.message.split('\n')[0]})`));

// Recall playground: hits with their signals.
await visit('recall', `/ui/recall?query=${encodeURIComponent(fx.search.query)}&user_id=${encodeURIComponent(fx.user)}`,
  () => page.locator('.hits li', { hasText: fx.search.expect }).first().waitFor());
check(await page.locator('.hits li').first().getByRole('img', { name: /^relevance / }).count() === 1,
  'recall hits show their signals');

// A changed fact: with superseded memories asked for, each hit shows its state and when it
// was true.
for (const [content, day] of [['I live in Lisbon, near the river.', '2024-03-01'], ['Moved to Porto last week.', '2024-09-01']]) {
  await api(fx.base, 'POST', '/v1/memories', { body: { content, user_id: 'ui-changed', valid_from: `${day}T12:00:00Z` } });
}
await visit('recall-superseded', `/ui/recall?query=${encodeURIComponent('where do I live, Lisbon?')}&user_id=ui-changed&include_superseded=true`,
  () => page.locator('.hits li', { hasText: 'Porto' }).first().waitFor());
const stateOf = async (what) => page.locator('.hits li', { hasText: what }).first().locator('.state').textContent();
check(await stateOf('Lisbon') === 'superseded' && await stateOf('Porto') === 'active',
  'recall hits show their state: the older home superseded by the newer');
check((await page.locator('.hits li', { hasText: 'Lisbon' }).first().textContent()).includes('true 2024-03-01 – 2024-09-01'),
  'a superseded hit shows when it was true');

// Declarative: accept a pending confirmation.
await visit('declarative', `/ui/declarative?user_id=${encodeURIComponent(fx.proposal.user)}`,
  () => page.locator('.proposals li', { hasText: fx.proposal.content }).waitFor());
await page.locator('.proposals li', { hasText: fx.proposal.content }).getByRole('button', { name: 'Accept' }).click();
await page.getByText(`Accepted: ${fx.proposal.content}`).waitFor();
got = await api(fx.base, 'GET', `/v1/proposals?user_id=${encodeURIComponent(fx.proposal.user)}`);
check(got.status === 200 && !got.body.proposals.some((p) => p.content === fx.proposal.content), 'the accepted proposal is no longer pending');
got = await api(fx.base, 'GET', `/v1/memories?user_id=${encodeURIComponent(fx.proposal.user)}&scope=declarative`);
check(got.body.items.some((m) => m.content === fx.proposal.content), 'the accepted proposal is an entry in the API');
await page.locator('table', { hasText: fx.proposal.content }).first().waitFor()
  .then(() => check(true, 'the page lists the accepted entry'), () => check(false, 'the page lists the accepted entry'));

// Graph: the known edge, drawn and listed.
const e = fx.edge;
await visit('graph', `/ui/graph?user_id=${encodeURIComponent(fx.graph_user)}`,
  () => page.locator('[data-testid=graph][data-drawn=true]').waitFor());
const edgeRow = page.locator('table.relations tbody tr', { hasText: e.subject }).filter({ hasText: e.predicate }).filter({ hasText: e.object });
check(await edgeRow.count() >= 1, `the graph shows ${e.subject} -${e.predicate}-> ${e.object}`);
const canvas = await page.locator('[data-testid=graph] canvas').count();
check(canvas >= 1, 'the graph is drawn');
// An empty graph says how it gets filled.
await visit('graph-empty', '/ui/graph?user_id=nobody-at-all', () => page.getByText('No relations').waitFor());
check(await page.getByText('--graph-extractor offline').count() === 1, 'an empty graph tells how to turn extraction on');

// Analytics: charts drawn, the heatmap of the user's memories.
await visit('analytics', `/ui/analytics?user_id=${encodeURIComponent(fx.user)}`, async () => {
  await page.locator('[data-testid=growth][data-drawn=true]').waitFor();
  await page.locator('[data-testid=heatmap][data-drawn=true]').waitFor();
});
check(await page.locator('.card .big').first().textContent() !== '0', 'analytics counts the memories');
// The server keeps the access log: the chart counts accesses per day, as the API does.
const logged = (await api(fx.base, 'GET', `/v1/analytics?user_id=${encodeURIComponent(fx.user)}&days=30&top=0`)).body;
const accessLabel = await page.locator('[data-testid=access]').getAttribute('aria-label');
check(logged.access_log === true && accessLabel.includes('named accesses')
  && await page.getByText('from the access log').count() === 1,
`the access chart reads the access log (access_log ${logged.access_log}, chart "${accessLabel.slice(0, 60)}")`);

// Operations: store health (application state counted apart from memories), a maintenance
// job run to its end.
const stateSet = await api(fx.base, 'PUT', '/v1/kv/_state.browser-test/checkpoint', { body: { value: { step: 1 } } });
check(stateSet.status === 200 || stateSet.status === 201, `application state written (${stateSet.status})`);
const storeStats = (await api(fx.base, 'GET', '/v1/stats')).body;
await visit('operations', '/ui/operations', () => page.getByRole('heading', { name: 'Store' }).waitFor());
check(await page.locator('.card', { hasText: 'Memories' }).locator('.big').textContent() === String(storeStats.total)
  && storeStats.namespaces.every((n) => !n.namespace.startsWith('_state.')),
'operations counts memories without application state');
check((await page.locator('[data-testid=app-state]').textContent()).includes(`${storeStats.state.records} records of application state`),
  'operations says how much application state it left out');
await page.locator('form[aria-label=maintenance]').getByRole('checkbox', { name: 'Dry run' }).check();
await page.locator('form[aria-label=maintenance]').getByRole('button', { name: 'Run' }).click();
await page.locator('.job', { hasText: 'done' }).waitFor({ timeout: 30000 })
  .then(() => check(true, 'a maintenance job runs to its end with progress shown'), (x) => check(false, `maintenance job (${x.message.split('\n')[0]})`));
await page.screenshot({ path: join(fx.out, 'operations-job.png'), fullPage: true });

// A server with keys: the page asks for one, then shows that key's tenant only.
if (fx.auth) {
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const p = await ctx.newPage();
  await p.goto(`${fx.auth.base}/ui/memories?user_id=${encodeURIComponent(fx.auth.user)}`);
  await p.getByRole('textbox', { name: 'Key' }).waitFor();
  check(true, 'with keys, the page asks for one');
  await p.getByRole('textbox', { name: 'Key' }).fill(fx.auth.key);
  await p.getByRole('button', { name: 'Use key' }).click();
  await p.locator('table tbody tr', { hasText: fx.auth.expect }).first().waitFor()
    .then(() => check(true, 'with the key, the tenant\'s memories are shown'), (x) => check(false, `keyed page (${x.message.split('\n')[0]})`));
  check(await p.locator('table tbody tr', { hasText: fx.auth.hidden }).count() === 0, 'another tenant\'s memory is not shown');
  await p.screenshot({ path: join(fx.out, 'keyed.png'), fullPage: true });
  await ctx.close();
}

await browser.close();
console.log(failed ? `dashboard: ${failed} checks failed` : 'dashboard: every check passed');
process.exit(failed ? 1 : 0);
