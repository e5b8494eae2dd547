// Memories: filter, search (full text or by meaning), page through, view with history,
// edit, delete, bulk delete. Every filter is in the address.
import { useEffect, useState } from 'preact/hooks';
import { del, get, patch, post } from '../api.js';
import { navigate, paramsOf } from '../route.js';
import {
  ErrorBox, Field, History, Notice, Pager, SCOPES, STATES, Select, html, text, useConfirm,
  useLoad, when,
} from '../ui.js';

const PAGE = 50;
const FILTERS = ['namespace', 'user_id', 'agent_id', 'session_id', 'scope', 'category', 'tag',
  'state', 'from', 'to', 'q', 'mode', 'order'];
// Listing orders besides the default (oldest first): the API's `order`.
const ORDERS = ['newest', 'importance', 'accessed'];

// The day of a date input as RFC 3339 (start of that UTC day; `end` the start of the next).
function day(d, end) {
  if (!d) return undefined;
  const t = new Date(`${d}T00:00:00Z`);
  if (Number.isNaN(t.getTime())) return undefined;
  if (end) t.setUTCDate(t.getUTCDate() + 1);
  return t.toISOString();
}

function load(f, cursor) {
  if (f.q) {
    const filters = {};
    if (f.agent_id) filters.agent_id = f.agent_id;
    if (f.category) filters.category = f.category;
    if (f.scope) filters.scope = f.scope;
    if (f.tag && f.tag.length) filters.tags = f.tag;
    if (f.from) filters.created_after = day(f.from);
    if (f.to) filters.created_before = day(f.to, true);
    return post('/v1/recall', {
      query: f.q,
      namespace: f.namespace || undefined,
      user_id: f.user_id || undefined,
      session_id: f.session_id || undefined,
      mode: f.mode === 'semantic' ? 'vector' : 'lexical',
      limit: PAGE,
      filters,
      include_archived: f.state === 'archived',
    }).then((r) => ({ items: r.hits.map((x) => ({ ...x.memory, _score: x.score })) }));
  }
  return get('/v1/memories', {
    namespace: f.namespace,
    user_id: f.user_id,
    agent_id: f.agent_id,
    session_id: f.session_id,
    scope: f.scope,
    category: f.category,
    tag: f.tag,
    state: f.state,
    created_after: day(f.from),
    created_before: day(f.to, true),
    order: f.order,
    cursor,
    limit: PAGE,
  });
}

function Filters({ f, onApply }) {
  const [v, setV] = useState(f);
  // The form follows the address (back, forward, a link).
  useEffect(() => setV(f), [JSON.stringify(f)]);
  const set = (k) => (x) => setV({ ...v, [k]: x });
  const submit = (e) => {
    e.preventDefault();
    onApply(v);
  };
  return html`<form class="filters" onSubmit=${submit} aria-label="filters">
    <${Field} label="Search" name="q" type="search" value=${v.q} onInput=${set('q')}
      placeholder="words or a question" />
    <${Select} label="Search by" name="mode" value=${v.mode} onChange=${set('mode')}
      options=${['semantic']} any="full text" />
    <${Field} label="Namespace" name="namespace" value=${v.namespace} onInput=${set('namespace')} placeholder="default" />
    <${Field} label="User" name="user_id" value=${v.user_id} onInput=${set('user_id')} />
    <${Field} label="Agent" name="agent_id" value=${v.agent_id} onInput=${set('agent_id')} />
    <${Field} label="Session" name="session_id" value=${v.session_id} onInput=${set('session_id')} />
    <${Select} label="Scope" name="scope" value=${v.scope} onChange=${set('scope')} options=${SCOPES} />
    <${Field} label="Category" name="category" value=${v.category} onInput=${set('category')} />
    <${Field} label="Tag" name="tag" value=${(v.tag || []).join(',')}
      onInput=${(x) => set('tag')(x.split(',').map((t) => t.trim()).filter(Boolean))} placeholder="a,b" />
    <${Select} label="State" name="state" value=${v.state} onChange=${set('state')} options=${STATES} />
    <${Select} label="Order" name="order" value=${v.order} onChange=${set('order')} options=${ORDERS}
      any="oldest first" />
    <${Field} label="Created from" name="from" type="date" value=${v.from} onInput=${set('from')} />
    <${Field} label="Created to" name="to" type="date" value=${v.to} onInput=${set('to')} />
    <div class="actions"><button type="submit">Apply</button>
      <button type="button" onClick=${() => { setV({}); onApply({}); }}>Clear</button></div>
  </form>`;
}

function Detail({ id, f, onChanged, onClose, ask }) {
  const acting = f.user_id || undefined;
  const m = useLoad(() => get(`/v1/memories/${id}`, { user_id: acting }), [id, acting]);
  const [edit, setEdit] = useState(null);
  const [error, setError] = useState(null);
  const [saved, setSaved] = useState(false);
  if (m.error) return html`<section class="detail" aria-label="memory"><${ErrorBox} error=${m.error} />
    <button type="button" onClick=${onClose}>Close</button></section>`;
  if (!m.data) return html`<section class="detail" aria-label="memory"><p class="loading">Loading…</p></section>`;
  const mem = m.data;
  const save = async (e) => {
    e.preventDefault();
    setError(null);
    try {
      const body = {
        content: edit.content,
        importance: Number(edit.importance),
        tags: edit.tags.split(',').map((t) => t.trim()).filter(Boolean),
        expected_version: mem.version,
        actor: 'dashboard',
      };
      if (edit.category && edit.category !== mem.category) body.category = edit.category;
      if (mem.scope === 'declarative' && mem.user_id) body.user_id = mem.user_id;
      await patch(`/v1/memories/${id}`, body);
      setEdit(null);
      setSaved(true);
      m.reload();
      onChanged();
    } catch (err) {
      setError(err);
    }
  };
  const remove = () =>
    ask(`Delete this memory? "${text(mem).slice(0, 120)}"`, async () => {
      await del(`/v1/memories/${id}`, { user_id: mem.scope === 'declarative' ? mem.user_id : acting });
      onChanged();
      onClose();
    });
  return html`<section class="detail" aria-labelledby="detail-title">
    <div class="row"><h2 id="detail-title">Memory</h2>
      <button type="button" onClick=${onClose}>Close</button></div>
    ${saved && html`<${Notice}>Saved.</${Notice}>`}
    ${edit
      ? html`<form onSubmit=${save} class="edit" aria-label="edit memory">
          <label class="field wide" for="edit-content"><span>Content</span>
            <textarea id="edit-content" rows="4" value=${edit.content}
              onInput=${(e) => setEdit({ ...edit, content: e.currentTarget.value })}></textarea></label>
          <${Field} label="Category" name="edit-category" value=${edit.category}
            onInput=${(x) => setEdit({ ...edit, category: x })} />
          <${Field} label="Tags" name="edit-tags" value=${edit.tags} onInput=${(x) => setEdit({ ...edit, tags: x })} />
          <${Field} label="Importance" name="edit-importance" type="number" min="0" max="1" step="0.05"
            value=${edit.importance} onInput=${(x) => setEdit({ ...edit, importance: x })} />
          <${ErrorBox} error=${error} />
          <div class="actions"><button type="submit">Save</button>
            <button type="button" onClick=${() => setEdit(null)}>Cancel</button></div>
        </form>`
      : html`<p class="content">${text(mem)}</p>
        <div class="actions">
          <button type="button" onClick=${() => { setSaved(false); setEdit({ content: text(mem),
            category: mem.category, tags: (mem.tags || []).join(', '), importance: mem.importance }); }}>Edit</button>
          <button type="button" class="danger" onClick=${remove}>Delete</button>
        </div>`}
    <dl class="fields">
      ${[['id', mem.id], ['namespace', mem.namespace], ['scope', mem.scope], ['category', mem.category],
        ['state', mem.state], ['user', mem.user_id], ['agent', mem.agent_id], ['session', mem.session_id],
        ['tags', (mem.tags || []).join(', ')], ['importance', mem.importance], ['confidence', mem.confidence],
        ['source', mem.source], ['created', when(mem.created_at)], ['updated', when(mem.updated_at)],
        ['accessed', mem.access_count], ['version', mem.version]]
        .filter(([, v]) => v !== undefined && v !== null && v !== '')
        .map(([k, v]) => html`<dt>${k}</dt><dd>${String(v)}</dd>`)}
    </dl>
    <h3>History</h3>
    <${History} key=${mem.version} id=${id} user=${acting} />
  </section>`;
}

export function Memories({ params }) {
  const f = paramsOf(params, ['tag', 'c']);
  const cursors = f.c || [];
  const filters = Object.fromEntries(FILTERS.map((k) => [k, f[k]]));
  const [selected, setSelected] = useState(new Set());
  const [notice, setNotice] = useState(null);
  const [dialog, ask] = useConfirm();
  const list = useLoad(() => load(filters, cursors[cursors.length - 1]), [params.toString()]);
  const go = (next, extra = {}) => navigate('memories', { ...next, ...extra });
  const items = (list.data && list.data.items) || [];
  const toggle = (id) => {
    const s = new Set(selected);
    if (s.has(id)) s.delete(id);
    else s.add(id);
    setSelected(s);
  };
  const bulk = () =>
    ask(`Delete ${selected.size} selected memories? This cannot be undone.`, async () => {
      const byId = new Map(items.map((m) => [m.id, m]));
      let done = 0;
      for (const id of selected) {
        const m = byId.get(id);
        await del(`/v1/memories/${id}`, { user_id: m && m.scope === 'declarative' ? m.user_id : undefined });
        done += 1;
      }
      setSelected(new Set());
      setNotice(`Deleted ${done} memories.`);
      list.reload();
    }, `Delete ${selected.size}`);
  const searching = Boolean(filters.q);
  return html`<h1>Memories</h1>
    <${Filters} f=${filters} onApply=${(v) => { setSelected(new Set()); go(v); }} />
    ${notice && html`<${Notice}>${notice}</${Notice}>`}
    <${ErrorBox} error=${list.error} />
    <div class="split">
      <section class="list" aria-label="memories">
        <div class="row">
          <span class="muted" aria-live="polite">${list.loading ? 'Loading…'
            : `${items.length} ${searching ? 'results by score, highest first (not all of them close)' : 'on this page'}`}</span>
          <button type="button" class="danger" disabled=${!selected.size} onClick=${bulk}>
            Delete selected (${selected.size})</button>
        </div>
        <table>
          <thead><tr><th scope="col"><span class="sr-only">Select</span></th><th scope="col">Memory</th>
            ${searching && html`<th scope="col">Score</th>`}
            <th scope="col">Scope</th><th scope="col">User</th><th scope="col">State</th><th scope="col">Created</th></tr></thead>
          <tbody>
            ${items.map((m) => html`<tr key=${m.id} class=${f.id === m.id ? 'current' : ''}>
              <td><input type="checkbox" aria-label=${`select ${m.id}`} checked=${selected.has(m.id)}
                onChange=${() => toggle(m.id)} /></td>
              <td><a href=${`/ui/memories?${withParam(params, 'id', m.id)}`}
                onClick=${(e) => { e.preventDefault(); go(paramsOf(params, ['tag', 'c']), { id: m.id }); }}
                class="memtext">${text(m).slice(0, 200)}</a></td>
              ${searching && html`<td>${m._score === undefined ? '' : m._score.toFixed(3)}</td>`}
              <td>${m.scope}</td><td>${m.user_id || ''}</td><td>${m.state}</td><td>${when(m.created_at)}</td>
            </tr>`)}
          </tbody>
        </table>
        ${!list.loading && !items.length && !list.error && html`<p class="muted">No memories match.</p>`}
        ${!searching && html`<${Pager} cursors=${cursors} next=${list.data && list.data.next_cursor}
          onPage=${(c) => go({ ...filters, c })} />`}
      </section>
      ${f.id && html`<${Detail} key=${f.id} id=${f.id} f=${filters} ask=${ask}
        onChanged=${() => list.reload()}
        onClose=${() => go(paramsOf(params, ['tag', 'c']), { id: undefined })} />`}
    </div>
    ${dialog}`;
}

function withParam(params, k, v) {
  const q = new URLSearchParams(params);
  q.set(k, v);
  return q;
}
