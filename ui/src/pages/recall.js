// The recall playground: a query with the request's options, and each hit with its score and
// the signals that made it.
import { useEffect, useState } from 'preact/hooks';
import { post } from '../api.js';
import { navigate, paramsOf } from '../route.js';
import { ErrorBox, Field, SCOPES, Select, html, text, useLoad } from '../ui.js';

const SIGNALS = [
  ['relevance', 'relevance'],
  ['lexical', 'lexical_score'],
  ['vector', 'similarity'],
  ['graph', 'graph'],
  ['reranker', 'rerank'],
  ['recency', 'recency'],
  ['access', 'access'],
  ['importance', 'importance'],
];

function Bar({ label, value, raw }) {
  if (value === undefined || value === null) return html`<span class="sig none">${label} —</span>`;
  const pct = Math.max(0, Math.min(1, value)) * 100;
  return html`<span class="sig" title=${`${label}: ${raw ?? value}`}>
    <span class="siglabel">${label}</span>
    <span class="bar" role="img" aria-label=${`${label} ${Number(raw ?? value).toFixed(3)}`}>
      <span style=${`width:${pct.toFixed(1)}%`}></span></span>
    <span class="num">${Number(raw ?? value).toFixed(3)}</span></span>`;
}

// A datetime-local value ("2025-11-04T12:00") as the API's RFC 3339 time, read as UTC.
function asOf(v) {
  if (!v) return undefined;
  return v.length === 16 ? `${v}:00Z` : v;
}

// When a memory was true: from its valid_from (else when it was written) until valid_until.
function truth(m) {
  const day = (t) => (t ? t.slice(0, 10) : '');
  const from = day(m.valid_from || m.created_at);
  return m.valid_until ? `true ${from} – ${day(m.valid_until)}` : `true since ${from}`;
}

export function Recall({ params }) {
  const f = paramsOf(params);
  const [v, setV] = useState({ limit: '10', ...f });
  // The form follows the address (back, forward, a link).
  useEffect(() => setV({ limit: '10', ...f }), [params.toString()]);
  const set = (k) => (x) => setV({ ...v, [k]: x });
  const result = useLoad(() => {
    if (!f.query) return Promise.resolve(null);
    const filters = {};
    if (f.scope) filters.scope = f.scope;
    if (f.category) filters.category = f.category;
    if (f.agent_id) filters.agent_id = f.agent_id;
    return post('/v1/recall', {
      query: f.query,
      namespace: f.namespace || undefined,
      user_id: f.user_id || undefined,
      session_id: f.session_id || undefined,
      limit: f.limit ? Number(f.limit) : undefined,
      mode: f.mode || undefined,
      min_score: f.min_score ? Number(f.min_score) : undefined,
      include_archived: f.include_archived === 'true',
      include_superseded: f.include_superseded === 'true',
      as_of: asOf(f.as_of),
      cluster: f.cluster ? Number(f.cluster) : undefined,
      filters,
      explain: true,
    });
  }, [params.toString()]);
  const submit = (e) => {
    e.preventDefault();
    navigate('recall', v);
  };
  // BM25 scores are unbounded: bars are scaled to the best of this answer.
  const hits = (result.data && result.data.hits) || [];
  const maxLex = Math.max(1e-9, ...hits.map((h) => (h.signals && h.signals.lexical_score) || 0));
  return html`<h1>Recall playground</h1>
    <form class="filters" onSubmit=${submit} aria-label="recall request">
      <${Field} label="Query" name="query" type="search" value=${v.query} onInput=${set('query')} required
        placeholder="what the agent is asked" class="wide" />
      <${Field} label="Namespace" name="namespace" value=${v.namespace} onInput=${set('namespace')} placeholder="default" />
      <${Field} label="User" name="user_id" value=${v.user_id} onInput=${set('user_id')} />
      <${Field} label="Session" name="session_id" value=${v.session_id} onInput=${set('session_id')} />
      <${Field} label="Agent" name="agent_id" value=${v.agent_id} onInput=${set('agent_id')} />
      <${Select} label="Mode" name="mode" value=${v.mode} onChange=${set('mode')}
        options=${['hybrid', 'lexical', 'vector', 'overlap']} any="default (hybrid)" />
      <${Select} label="Scope" name="scope" value=${v.scope} onChange=${set('scope')} options=${SCOPES} />
      <${Field} label="Category" name="category" value=${v.category} onInput=${set('category')} />
      <${Field} label="Limit" name="limit" type="number" min="1" max="100" value=${v.limit} onInput=${set('limit')} />
      <${Field} label="Min score" name="min_score" type="number" min="0" max="1" step="0.05"
        value=${v.min_score} onInput=${set('min_score')} />
      <${Field} label="Cluster" name="cluster" type="number" min="0" value=${v.cluster} onInput=${set('cluster')} />
      <label class="field check" for="inc-arch"><input id="inc-arch" type="checkbox"
        checked=${v.include_archived === 'true'} onChange=${(e) => set('include_archived')(e.currentTarget.checked ? 'true' : '')} />
        <span>Include archived</span></label>
      <label class="field check" for="inc-sup"><input id="inc-sup" type="checkbox"
        checked=${v.include_superseded === 'true'} onChange=${(e) => set('include_superseded')(e.currentTarget.checked ? 'true' : '')} />
        <span>Include superseded</span></label>
      <${Field} label="As of (UTC)" name="as_of" type="datetime-local" value=${v.as_of} onInput=${set('as_of')} />
      <div class="actions"><button type="submit">Recall</button></div>
    </form>
    <${ErrorBox} error=${result.error} />
    ${result.loading && f.query && html`<p class="loading">Recalling…</p>`}
    ${result.data && html`<section aria-label="hits">
      <p class="muted" aria-live="polite">${hits.length} hits</p>
      <ol class="hits">${hits.map((h) => html`<li key=${h.memory.id}>
        <div class="row"><a href=${`/ui/memories?id=${h.memory.id}${h.memory.user_id ? `&user_id=${encodeURIComponent(h.memory.user_id)}` : ''}`}
          class="memtext">${text(h.memory)}</a><strong class="score">${h.score.toFixed(3)}</strong></div>
        <div class="signals">${SIGNALS.map(([label, k]) => {
          const s = h.signals || {};
          const raw = s[k];
          const scaled = k === 'lexical_score' && raw !== undefined ? raw / maxLex : raw;
          return html`<${Bar} label=${label} value=${scaled} raw=${raw} />`;
        })}
        ${h.signals && h.signals.lexical_rank && html`<span class="muted">lexical rank ${h.signals.lexical_rank}</span>`}
        ${h.signals && h.signals.vector_rank && html`<span class="muted"> · vector rank ${h.signals.vector_rank}</span>`}
        </div>
        <div class="muted"><span class=${`state ${h.memory.state}`}>${h.memory.state}</span>
          · ${truth(h.memory)}
          ${h.memory.superseded_by && html` · superseded by <a href=${`/ui/memories?id=${h.memory.superseded_by}${h.memory.user_id ? `&user_id=${encodeURIComponent(h.memory.user_id)}` : ''}`}>${h.memory.superseded_by}</a>`}
          · ${h.memory.scope} · ${h.memory.user_id || 'no user'} · ${h.memory.created_at}</div>
      </li>`)}</ol></section>`}`;
}
