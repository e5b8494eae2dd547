// Operations: the store's health and counts, maintenance jobs with their progress, and API
// keys (admin keys only).
import { useEffect, useState } from 'preact/hooks';
import { del, get, post } from '../api.js';
import { ErrorBox, Field, Notice, html, useConfirm, useLoad, when } from '../ui.js';

const JOBS = ['expire', 'consolidate', 'promote', 'prune', 'archive', 'cluster'];

function Health() {
  const ready = useLoad(() => get('/readyz'), []);
  const stats = useLoad(() => get('/v1/stats'), []);
  return html`<section aria-labelledby="health-title"><h2 id="health-title">Store</h2>
    <${ErrorBox} error=${stats.error || ready.error} />
    ${stats.data && html`<div class="cards">
      <div class="card"><h3>Health</h3><p class="big">${stats.data.healthy && ready.data ? 'ok' : 'unavailable'}</p>
        <p class="muted">${stats.data.backend} · tenant ${stats.data.tenant}</p></div>
      <div class="card"><h3>Memories</h3><p class="big">${stats.data.total}</p>
        ${stats.data.state && stats.data.state.records > 0 && html`<p class="muted" data-testid="app-state">not counted: ${stats.data.state.records} records of application state (checkpoints) in ${stats.data.state.namespaces} namespaces</p>`}</div>
      <div class="card"><h3>By namespace</h3><dl class="fields">${stats.data.namespaces.map((n) =>
        html`<dt>${n.namespace}</dt><dd>${n.count}</dd>`)}</dl></div></div>`}
  </section>`;
}

function Progress({ job }) {
  const pct = job.total ? Math.round((100 * job.done) / job.total) : job.state === 'done' ? 100 : 0;
  return html`<progress max="100" value=${pct} aria-label=${`job ${job.id} ${pct}%`}></progress>
    <span class="muted"> ${job.done} of ${job.total || '?'}</span>`;
}

function Maintenance() {
  const [form, setForm] = useState({ jobs: ['expire', 'consolidate', 'promote'], user_id: '', dry_run: false, max_memories: '' });
  const [error, setError] = useState(null);
  const [running, setRunning] = useState(null);
  const jobs = useLoad(() => get('/v1/jobs'), []);
  useEffect(() => {
    if (!running || running.state !== 'running') return undefined;
    const t = setTimeout(async () => {
      try {
        setRunning(await get(`/v1/jobs/${running.id}`));
      } catch (e) {
        setError(e);
      }
    }, 500);
    return () => clearTimeout(t);
  }, [running]);
  useEffect(() => {
    if (running && running.state !== 'running') jobs.reload();
  }, [running && running.state]);
  const toggle = (j) => setForm({ ...form, jobs: form.jobs.includes(j) ? form.jobs.filter((x) => x !== j) : [...form.jobs, j] });
  const start = async (e) => {
    e.preventDefault();
    setError(null);
    try {
      const body = { jobs: form.jobs, dry_run: form.dry_run, background: true };
      if (form.user_id) body.user_id = form.user_id;
      if (form.max_memories) body.max_memories = Number(form.max_memories);
      setRunning(await post('/v1/maintenance', body));
    } catch (err) {
      setError(err);
    }
  };
  return html`<section aria-labelledby="maint-title"><h2 id="maint-title">Maintenance</h2>
    <form class="filters" onSubmit=${start} aria-label="maintenance">
      <fieldset><legend>Jobs</legend>${JOBS.map((j) => html`<label class="check" for=${`job-${j}`}>
        <input id=${`job-${j}`} type="checkbox" checked=${form.jobs.includes(j)} onChange=${() => toggle(j)} /> ${j}</label>`)}</fieldset>
      <${Field} label="Only user" name="m-user" value=${form.user_id} onInput=${(x) => setForm({ ...form, user_id: x })} />
      <${Field} label="Prune to (memories per user)" name="m-max" type="number" min="1" value=${form.max_memories}
        onInput=${(x) => setForm({ ...form, max_memories: x })} />
      <label class="check" for="m-dry"><input id="m-dry" type="checkbox" checked=${form.dry_run}
        onChange=${(e) => setForm({ ...form, dry_run: e.currentTarget.checked })} /> Dry run</label>
      <div class="actions"><button type="submit" disabled=${running && running.state === 'running'}>Run</button></div>
    </form>
    <${ErrorBox} error=${error} />
    ${running && html`<div class="job" aria-live="polite">Job ${running.id}: <strong>${running.state}</strong> <${Progress} job=${running} />
      ${running.error && html`<${ErrorBox} error=${{ code: running.error_code, message: running.error }} />`}
      ${running.report && html`<pre>${JSON.stringify(running.report, null, 2)}</pre>`}</div>`}
    <h3>Jobs of this server</h3>
    ${jobs.error ? html`<${ErrorBox} error=${jobs.error} />` : jobs.data && (jobs.data.items.length
      ? html`<table><thead><tr><th scope="col">Job</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col">Progress</th></tr></thead>
        <tbody>${jobs.data.items.map((j) => html`<tr key=${j.id}><td>${j.id}</td><td>${j.kind}</td><td>${j.state}</td>
          <td><${Progress} job=${j} /></td></tr>`)}</tbody></table>`
      : html`<p class="muted">No jobs yet.</p>`)}
  </section>`;
}

function Keys() {
  const keys = useLoad(() => get('/v1/admin/keys'), []);
  const [form, setForm] = useState({ tenant: '', label: '', admin: false, operator: false });
  const [created, setCreated] = useState(null);
  const [error, setError] = useState(null);
  const [dialog, ask] = useConfirm();
  const create = async (e) => {
    e.preventDefault();
    setError(null);
    try {
      const body = { tenant: form.tenant, admin: form.admin, operator: form.operator };
      if (form.label) body.label = form.label;
      setCreated(await post('/v1/admin/keys', body));
      keys.reload();
    } catch (err) {
      setError(err);
    }
  };
  const revoke = (k) => ask(`Revoke key ${k.id}${k.label ? ` (${k.label})` : ''} of tenant ${k.tenant}? Clients using it stop working.`,
    async () => {
      await del(`/v1/admin/keys/${k.id}`);
      keys.reload();
    }, 'Revoke');
  return html`<section aria-labelledby="keys-title"><h2 id="keys-title">API keys</h2>
    ${keys.error ? html`<${ErrorBox} error=${keys.error} />` : keys.data && html`<table><thead><tr><th scope="col">Id</th>
      <th scope="col">Tenant</th><th scope="col">Label</th><th scope="col">Rights</th><th scope="col">Created</th><th scope="col"></th></tr></thead>
      <tbody>${keys.data.keys.map((k) => html`<tr key=${k.id}><td>${k.id}</td><td>${k.tenant}</td><td>${k.label || ''}</td>
        <td>${[k.admin && 'admin', k.operator && 'operator'].filter(Boolean).join(', ') || 'user'}</td><td>${when(k.created_at)}</td>
        <td><button type="button" class="danger" onClick=${() => revoke(k)}>Revoke</button></td></tr>`)}</tbody></table>
      ${!keys.data.keys.length && html`<p class="muted">No keys: the server is open on loopback. The first key
        made ends that: from then on every request, this page's too, needs a key.</p>`}`}
    ${!keys.error && html`<form class="filters" onSubmit=${create} aria-label="new key">
      <${Field} label="Tenant" name="k-tenant" value=${form.tenant} onInput=${(x) => setForm({ ...form, tenant: x })} required />
      <${Field} label="Label" name="k-label" value=${form.label} onInput=${(x) => setForm({ ...form, label: x })} />
      <label class="check" for="k-admin"><input id="k-admin" type="checkbox" checked=${form.admin}
        onChange=${(e) => setForm({ ...form, admin: e.currentTarget.checked })} /> Admin</label>
      <label class="check" for="k-op"><input id="k-op" type="checkbox" checked=${form.operator}
        onChange=${(e) => setForm({ ...form, operator: e.currentTarget.checked })} /> Operator</label>
      <div class="actions"><button type="submit">Create key</button></div></form>`}
    <${ErrorBox} error=${error} />
    ${created && html`<${Notice}>New key for ${created.info.tenant} (shown once): <code>${created.key}</code></${Notice}>`}
    ${dialog}
  </section>`;
}

export function Operations() {
  return html`<h1>Operations</h1><${Health} /><${Maintenance} /><${Keys} />`;
}
