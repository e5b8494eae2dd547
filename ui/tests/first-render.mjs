// Time to first render of the memories page: from navigation start to the first memory row
// drawn, in headless Chromium with a cold cache, against a running server whose user holds
// `memories` memories (written through the batch API first when they are not there yet).
//   node ui/tests/first-render.mjs --base http://127.0.0.1:7878 --memories 100000 --runs 3
// Prints each run and the median, in milliseconds. scripts/bench-ui runs it on a fresh server.
import { chromium } from 'playwright-core';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const base = args.base || 'http://127.0.0.1:7878';
const memories = Number(args.memories || 100000);
const runs = Number(args.runs || 3);
const user = args.user || 'ui-bench';
const key = args.key || process.env.MUISTI_API_KEY;
const headers = { 'Content-Type': 'application/json', ...(key ? { Authorization: `Bearer ${key}` } : {}) };

const PEOPLE = ['Alice', 'Bruno', 'Chen', 'Dana', 'Emeka', 'Farah', 'Goran', 'Hana', 'Ivan', 'Jun'];
const DOING = ['moved to', 'visited', 'loves', 'works at', 'studied in', 'opened a bakery in'];
const PLACES = ['Lisbon', 'Porto', 'Berlin', 'Nairobi', 'Osaka', 'Lima', 'Toronto', 'Krakow'];

async function count() {
  const r = await fetch(`${base}/v1/analytics?user_id=${user}&days=1&top=0`, { headers });
  if (!r.ok) throw new Error(`analytics: ${r.status} ${await r.text()}`);
  return (await r.json()).total;
}

let have = await count();
if (have < memories) {
  const started = Date.now();
  for (let i = have; i < memories; i += 1000) {
    const batch = [];
    for (let j = i; j < Math.min(memories, i + 1000); j++) {
      batch.push({
        content: `${PEOPLE[j % 10]} ${DOING[(j >> 3) % 6]} ${PLACES[(j >> 5) % 8]} (note ${j})`,
        user_id: user,
        tags: [`t${j % 7}`],
      });
    }
    const r = await fetch(`${base}/v1/memories/batch`, { method: 'POST', headers, body: JSON.stringify({ memories: batch }) });
    if (!r.ok) throw new Error(`batch: ${r.status} ${await r.text()}`);
  }
  have = await count();
  console.log(`wrote ${memories} memories in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
console.log(`user ${user} holds ${have} memories`);

const browser = await chromium.launch({
  executablePath: args.chromium || process.env.MUISTI_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const times = [];
for (let r = 0; r < runs; r++) {
  // A new context each run: no cache, no session.
  const context = await browser.newContext({ extraHTTPHeaders: key ? {} : {} });
  if (key) await context.addInitScript((k) => sessionStorage.setItem('muisti.key', k), key);
  await context.addInitScript(() => {
    new MutationObserver((_, obs) => {
      if (document.querySelector('table tbody tr')) {
        window.__firstRow = performance.now();
        obs.disconnect();
      }
    }).observe(document, { childList: true, subtree: true });
  });
  const page = await context.newPage();
  await page.goto(`${base}/ui/memories?user_id=${user}`);
  await page.waitForFunction(() => window.__firstRow !== undefined, null, { timeout: 30000 });
  const ms = await page.evaluate(() => window.__firstRow);
  const rows = await page.locator('table tbody tr').count();
  console.log(`run ${r + 1}: first row after ${ms.toFixed(0)} ms (${rows} rows shown)`);
  times.push(ms);
  await context.close();
}
await browser.close();
times.sort((a, b) => a - b);
console.log(`time to first render, median of ${runs}: ${times[Math.floor(runs / 2)].toFixed(0)} ms at ${have} memories`);
