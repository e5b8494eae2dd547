// The knowledge graph: a user's entities and the facts between them as an interactive
// drawing (drag, zoom, click an entity for its neighbourhood), as they hold now or as of a
// chosen time, with the same facts as a table.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { get } from '../api.js';
import { navigate, paramsOf } from '../route.js';
import { Chart, ErrorBox, Field, Select, html, useLoad, when } from '../ui.js';

// Most relations one view loads and draws (the server says when there are more).
const SHOWN = 400;

function option(relations) {
  const nodes = new Map();
  const node = (name, isValue) => {
    if (!nodes.has(name)) nodes.set(name, { name, value: 0, category: isValue ? 1 : 0 });
    nodes.get(name).value += 1;
  };
  const links = relations.map((r) => {
    node(r.subject, false);
    node(r.object, !r.object_id);
    return { source: r.subject, target: r.object, value: r.predicate };
  });
  return {
    tooltip: {},
    legend: [{ data: ['entity', 'value'] }],
    series: [{
      type: 'graph',
      layout: 'force',
      roam: true,
      draggable: true,
      categories: [{ name: 'entity' }, { name: 'value' }],
      data: [...nodes.values()].map((n) => ({ ...n, symbolSize: 12 + Math.min(24, n.value * 3) })),
      links,
      label: { show: true, position: 'right' },
      edgeLabel: { show: true, formatter: (p) => p.data.value, fontSize: 10 },
      edgeSymbol: ['none', 'arrow'],
      force: { repulsion: 160, edgeLength: 110 },
    }],
  };
}

export function Graph({ params }) {
  const f = paramsOf(params);
  const [v, setV] = useState(f);
  // The form follows the address (back, forward, a link).
  useEffect(() => setV(f), [params.toString()]);
  const set = (k) => (x) => setV({ ...v, [k]: x });
  const asOf = f.as_of ? new Date(f.as_of).toISOString() : undefined;
  const rel = useLoad(() => get('/v1/graph/relations', {
    user_id: f.user_id, as_of: asOf, entity: f.entity, hops: f.entity ? f.hops : undefined, limit: SHOWN,
  }), [params.toString()]);
  const relations = (rel.data && rel.data.relations) || [];
  const opt = useMemo(() => option(relations), [rel.data]);
  const entities = useMemo(() => [...new Set(relations.flatMap((r) => (r.object_id ? [r.subject, r.object] : [r.subject])))].sort(),
    [rel.data]);
  const focus = (name) => navigate('graph', { ...f, entity: name });
  return html`<h1>Knowledge graph</h1>
    <form class="filters" aria-label="graph filters" onSubmit=${(e) => { e.preventDefault(); navigate('graph', v); }}>
      <${Field} label="User" name="user_id" value=${v.user_id} onInput=${set('user_id')} />
      <${Field} label="As of" name="as_of" type="datetime-local" value=${v.as_of} onInput=${set('as_of')} />
      <${Field} label="Entity" name="entity" value=${v.entity} onInput=${set('entity')} list="entity-names" />
      <datalist id="entity-names">${entities.map((e) => html`<option value=${e} />`)}</datalist>
      <${Select} label="Hops" name="hops" value=${v.hops} onChange=${set('hops')} options=${['1', '2', '3']} any="1" />
      <div class="actions"><button type="submit">Show</button>
        ${f.entity && html`<button type="button" onClick=${() => navigate('graph', { ...f, entity: undefined, hops: undefined })}>
          Whole graph</button>`}</div>
    </form>
    <${ErrorBox} error=${rel.error} />
    <p class="muted" aria-live="polite">${rel.loading ? 'Loading…' : `${relations.length} relations, ${entities.length} entities${
      f.as_of ? `, as of ${when(asOf)}` : ', as they hold now'}`}
      ${rel.data && rel.data.truncated ? `; the first ${SHOWN} shown: pick an entity for its neighbourhood` : ''}</p>
    ${relations.length > 0 && html`<${Chart} option=${opt} height=${480} testid="graph"
      label=${`graph of ${relations.length} relations between ${entities.length} entities`} />`}
    <section aria-labelledby="rel-title"><h2 id="rel-title">Relations</h2>
      <table class="relations"><thead><tr><th scope="col">Subject</th><th scope="col">Predicate</th>
        <th scope="col">Object</th><th scope="col">Valid from</th><th scope="col">Until</th><th scope="col">Confidence</th></tr></thead>
      <tbody>${relations.map((r) => html`<tr key=${r.id}>
        <td><button type="button" class="link" onClick=${() => focus(r.subject)}>${r.subject}</button></td>
        <td>${r.predicate}</td>
        <td>${r.object_id ? html`<button type="button" class="link" onClick=${() => focus(r.object)}>${r.object}</button>` : r.object}</td>
        <td>${when(r.valid_at || r.created_at)}</td><td>${when(r.invalid_at)}</td><td>${r.confidence.toFixed(2)}</td>
      </tr>`)}</tbody></table>
      ${!rel.loading && !relations.length && !rel.error && html`<p class="muted">No relations${f.user_id ? '' : ' for memories without a user; name a user'}.</p>
        <p class="muted hint">The graph is read from memories by graph extraction, which is off
          by default: start the server with <code>--graph-extractor offline</code> (sentence
          patterns, no model) or <code>llm</code> (the chat model), and the memories written
          from then on are read into it.</p>`}
    </section>`;
}
