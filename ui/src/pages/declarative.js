// Declarative memory: a user's facts, preferences and rules with their confidence, the
// proposals waiting for the user's confirmation, and the entries that were superseded, each
// with its history.
import { useEffect, useState } from 'preact/hooks';
import { get, post } from '../api.js';
import { navigate, paramsOf } from '../route.js';
import {
  Badge, ErrorBox, Field, History, Notice, Pager, Select, TYPES, html, useConfirm, useLoad, when,
} from '../ui.js';

function Entries({ f, state, title, cursors, onPage }) {
  const [open, setOpen] = useState(null);
  const list = useLoad(() => get('/v1/memories', {
    namespace: f.namespace, user_id: f.user_id, scope: 'declarative', category: f.type, state,
    cursor: cursors[cursors.length - 1], limit: 50,
  }), [f.namespace, f.user_id, f.type, state, cursors.join()]);
  const items = (list.data && list.data.items) || [];
  const id = `${state}-title`;
  return html`<section aria-labelledby=${id}>
    <h2 id=${id}>${title}</h2>
    <${ErrorBox} error=${list.error} />
    <table><thead><tr><th scope="col">Entry</th><th scope="col">Type</th><th scope="col">Confidence</th>
      <th scope="col">Source</th><th scope="col">${state === 'superseded' ? 'Replaced by' : 'Updated'}</th></tr></thead>
    <tbody>${items.map((m) => html`<tr key=${m.id}>
      <td><button type="button" class="link" aria-expanded=${open === m.id}
        onClick=${() => setOpen(open === m.id ? null : m.id)}>${m.content}</button>
        ${open === m.id && html`<${History} id=${m.id} user=${f.user_id} />`}</td>
      <td>${m.type || m.category}</td>
      <td>${m.confidence ?? 'stated'}</td><td>${m.source}</td>
      <td>${state === 'superseded'
        ? html`<a href=${`/ui/memories?id=${m.superseded_by}&user_id=${encodeURIComponent(f.user_id)}`}>${m.superseded_by}</a>`
        : when(m.updated_at)}</td></tr>`)}</tbody></table>
    ${!list.loading && !items.length && !list.error && html`<p class="muted">None.</p>`}
    ${cursors && html`<${Pager} cursors=${cursors} next=${list.data && list.data.next_cursor} onPage=${onPage} />`}
  </section>`;
}

function Proposals({ f, onDecided }) {
  const list = useLoad(() => get('/v1/proposals', { user_id: f.user_id }), [f.user_id]);
  const [dialog, ask] = useConfirm();
  const [notice, setNotice] = useState(null);
  const [error, setError] = useState(null);
  const items = (list.data && list.data.proposals) || [];
  const accept = async (p) => {
    setError(null);
    try {
      await post(`/v1/proposals/${p.id}/confirm`, { user_id: f.user_id });
      setNotice(`Accepted: ${p.content}`);
      list.reload();
      onDecided();
    } catch (e) {
      setError(e);
    }
  };
  const reject = (p) => ask(`Reject the proposal "${p.content}"?`, async () => {
    await post(`/v1/proposals/${p.id}/reject`, { user_id: f.user_id });
    setNotice(`Rejected: ${p.content}`);
    list.reload();
  }, 'Reject');
  return html`<section aria-labelledby="pending-title">
    <h2 id="pending-title">Pending confirmations</h2>
    ${notice && html`<${Notice}>${notice}</${Notice}>`}
    <${ErrorBox} error=${list.error || error} />
    ${!list.loading && !items.length && !list.error && html`<p class="muted">Nothing waits for confirmation.</p>`}
    <ul class="proposals">${items.map((p) => html`<li key=${p.id}>
      <div><strong>${p.content}</strong> <${Badge}>${p.type || p.kind}</${Badge}>
        <span class="muted"> from ${p.source}${p.agent_id ? ` (${p.agent_id})` : ''}, confidence ${p.confidence ?? '—'},
        expires ${when(p.expires_at)}</span></div>
      ${p.supersedes && html`<div class="muted">would replace: <del>${p.supersedes.content}</del></div>`}
      <div class="actions"><button type="button" onClick=${() => accept(p)}>Accept</button>
        <button type="button" class="danger" onClick=${() => reject(p)}>Reject</button></div>
    </li>`)}</ul>
    ${dialog}
  </section>`;
}

export function Declarative({ params }) {
  const f = paramsOf(params, ['c', 'sc']);
  const [v, setV] = useState(f);
  // The form follows the address (back, forward, a link).
  useEffect(() => setV(f), [params.toString()]);
  const [epoch, setEpoch] = useState(0);
  const set = (k) => (x) => setV({ ...v, [k]: x });
  return html`<h1>Declarative memory</h1>
    <form class="filters" aria-label="filters" onSubmit=${(e) => { e.preventDefault(); navigate('declarative', v); }}>
      <${Field} label="User" name="user_id" value=${v.user_id} onInput=${set('user_id')} required />
      <${Field} label="Namespace" name="namespace" value=${v.namespace} onInput=${set('namespace')} placeholder="default" />
      <${Select} label="Type" name="type" value=${v.type} onChange=${set('type')} options=${TYPES} />
      <div class="actions"><button type="submit">Show</button></div>
    </form>
    ${!f.user_id
      ? html`<p class="muted">Declarative entries belong to one user: name the user.</p>`
      : html`<${Proposals} f=${f} onDecided=${() => setEpoch(epoch + 1)} />
        <${Entries} key=${`a${epoch}`} f=${f} state="active" title="Entries" cursors=${f.c || []}
          onPage=${(c) => navigate('declarative', { ...f, c })} />
        <${Entries} key=${`s${epoch}`} f=${f} state="superseded" title="Superseded" cursors=${f.sc || []}
          onPage=${(sc) => navigate('declarative', { ...f, sc })} />`}`;
}
