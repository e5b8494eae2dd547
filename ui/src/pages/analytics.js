// Analytics, aggregated on the server: growth per day by scope, access, the most accessed
// memories, an embedding similarity heatmap of a user's memories (or of one topic), and the
// user's topics with their labels and sizes.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { get } from '../api.js';
import { navigate, paramsOf } from '../route.js';
import { Chart, ErrorBox, Field, Notice, html, text, useLoad } from '../ui.js';

function daysOf(days) {
  const out = [];
  const today = new Date();
  for (let i = days - 1; i >= 0; i--) {
    const d = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - i));
    out.push(d.toISOString().slice(0, 10));
  }
  return out;
}

function growthOption(a, days) {
  const axis = daysOf(days);
  const scopes = [...new Set(a.growth.map((g) => g.scope))];
  return {
    tooltip: { trigger: 'axis' },
    legend: { data: scopes },
    grid: { left: 48, right: 16, bottom: 48 },
    xAxis: { type: 'category', data: axis },
    yAxis: { type: 'value', name: 'created' },
    series: scopes.map((s) => {
      const by = new Map(a.growth.filter((g) => g.scope === s).map((g) => [g.day, g.count]));
      return { name: s, type: 'bar', stack: 'scope', data: axis.map((d) => by.get(d) || 0) };
    }),
  };
}

// With the server's access log on, every access of each day; else the memories by the day
// of their last access (all a memory keeps without the log).
function accessOption(a, days) {
  const axis = daysOf(days);
  const series = a.access_log ? a.accesses : a.last_accessed;
  const by = new Map(series.map((g) => [g.day, g.count]));
  const name = a.access_log ? 'accesses' : 'memories last accessed';
  return {
    tooltip: { trigger: 'axis' },
    grid: { left: 48, right: 16, bottom: 48 },
    xAxis: { type: 'category', data: axis },
    yAxis: { type: 'value', name: a.access_log ? 'accesses' : 'last accessed' },
    series: [{ name, type: 'line', areaStyle: {}, data: axis.map((d) => by.get(d) || 0) }],
  };
}

function heatmapOption(s) {
  const labels = s.items.map((m, i) => `${i + 1}. ${text(m).slice(0, 28)}`);
  const data = [];
  let low = 1;
  s.matrix.forEach((row, i) => row.forEach((v, j) => {
    data.push([j, i, Number(v.toFixed(3))]);
    if (i !== j) low = Math.min(low, v);
  }));
  // The colour scale starts at the least similar pair, so differences show.
  const min = Math.max(-1, Math.floor(low * 10) / 10);
  return {
    tooltip: { formatter: (p) => `${labels[p.value[1]]}<br>${labels[p.value[0]]}<br>similarity ${p.value[2]}` },
    grid: { left: 220, right: 24, top: 16, bottom: 120 },
    xAxis: { type: 'category', data: labels.map((_, i) => String(i + 1)) },
    yAxis: { type: 'category', data: labels, inverse: true, axisLabel: { width: 200, overflow: 'truncate' } },
    visualMap: { min, max: 1, calculable: true, orient: 'horizontal', left: 'center', bottom: 8 },
    series: [{ type: 'heatmap', data, progressive: 0 }],
  };
}

function Counts({ title, counts }) {
  return html`<div class="card"><h3>${title}</h3><dl class="fields">
    ${Object.entries(counts).map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl></div>`;
}

function Similarity({ f }) {
  const sim = useLoad(() => get('/v1/analytics/similarity', {
    user_id: f.user_id, namespace: f.namespace, cluster: f.cluster, limit: 20,
  }), [f.user_id, f.namespace, f.cluster]);
  const opt = useMemo(() => sim.data && heatmapOption(sim.data), [sim.data]);
  return html`<section aria-labelledby="heat-title"><h2 id="heat-title">Similarity of ${f.cluster ? `topic ${f.cluster}` : 'the first memories'}</h2>
    <${ErrorBox} error=${sim.error} />
    ${sim.data && (sim.data.items.length < 2
      ? html`<p class="muted">Fewer than two memories to compare.</p>`
      : html`<${Chart} option=${opt} height=${560} testid="heatmap"
          label=${`similarity heatmap of ${sim.data.items.length} memories`} />`)}
  </section>`;
}

function Clusters({ f }) {
  const c = useLoad(() => get('/v1/clusters', { user_id: f.user_id, namespace: f.namespace }), [f.user_id, f.namespace]);
  const none = c.error && c.error.status === 404;
  return html`<section aria-labelledby="clusters-title"><h2 id="clusters-title">Topics</h2>
    ${none ? html`<p class="muted">Not clustered yet: run the cluster job (Operations).</p>` : html`<${ErrorBox} error=${c.error} />`}
    ${c.data && html`<p class="muted">${c.data.clusters.length} topics fitted on ${c.data.fitted_on} memories,
      silhouette ${c.data.silhouette.toFixed(2)}</p>
      <table><thead><tr><th scope="col">Topic</th><th scope="col">Label</th><th scope="col">Size</th><th scope="col"></th></tr></thead>
      <tbody>${c.data.clusters.map((k) => html`<tr key=${k.id}><td>${k.id}</td><td>${k.label}</td><td>${k.size}</td>
        <td><button type="button" class="link" onClick=${() => navigate('analytics', { ...f, cluster: k.id })}>
          Heatmap of topic ${k.id}</button></td></tr>`)}</tbody></table>`}
  </section>`;
}

export function Analytics({ params }) {
  const f = paramsOf(params);
  const [v, setV] = useState(f);
  // The form follows the address (back, forward, a link).
  useEffect(() => setV(f), [params.toString()]);
  const set = (k) => (x) => setV({ ...v, [k]: x });
  const days = Math.min(366, Math.max(1, Number(f.days) || 30));
  const a = useLoad(() => get('/v1/analytics', {
    namespace: f.namespace, user_id: f.user_id, scope: f.scope, days, top: 10,
  }), [f.namespace, f.user_id, f.scope, days]);
  const growth = useMemo(() => a.data && growthOption(a.data, days), [a.data]);
  const access = useMemo(() => a.data && accessOption(a.data, days), [a.data]);
  return html`<h1>Analytics</h1>
    <form class="filters" aria-label="filters" onSubmit=${(e) => { e.preventDefault(); navigate('analytics', v); }}>
      <${Field} label="User" name="user_id" value=${v.user_id} onInput=${set('user_id')} />
      <${Field} label="Namespace" name="namespace" value=${v.namespace} onInput=${set('namespace')} placeholder="default" />
      <${Field} label="Days" name="days" type="number" min="1" max="366" value=${v.days || '30'} onInput=${set('days')} />
      <div class="actions"><button type="submit">Show</button></div>
    </form>
    <${ErrorBox} error=${a.error} />
    ${a.loading && html`<p class="loading">Counting…</p>`}
    ${a.data && html`<div class="cards">
        <div class="card"><h3>Memories</h3><p class="big">${a.data.total}</p></div>
        <${Counts} title="By scope" counts=${a.data.by_scope} />
        <${Counts} title="By state" counts=${a.data.by_state} />
        <${Counts} title="By category" counts=${a.data.by_category} />
      </div>
      <section aria-labelledby="growth-title"><h2 id="growth-title">Growth per day by scope</h2>
        <${Chart} option=${growth} testid="growth" label=${`memories created per day over ${days} days, by scope`} /></section>
      <section aria-labelledby="access-title"><h2 id="access-title">Access over time</h2>
        ${a.data.access_log
          ? html`<p class="muted">Recalls and reads by id per day, from the access log.</p>
            <${Chart} option=${access} testid="access" label=${`accesses per day over ${days} days`} />`
          : html`<p class="muted">Memories by the day they were last recalled or read. Start the server with <code>--access-log scores</code> to count every access.</p>
            <${Chart} option=${access} testid="access" label=${`memories by day of last access over ${days} days`} />`}</section>
      <section aria-labelledby="top-title"><h2 id="top-title">Most accessed</h2>
        ${a.data.top_accessed.length ? html`<table><thead><tr><th scope="col">Memory</th><th scope="col">Accesses</th>
          <th scope="col">User</th></tr></thead><tbody>${a.data.top_accessed.map((m) => html`<tr key=${m.id}>
          <td><a href=${`/ui/memories?id=${m.id}${m.user_id ? `&user_id=${encodeURIComponent(m.user_id)}` : ''}`}>${text(m).slice(0, 160)}</a></td>
          <td>${m.access_count}</td><td>${m.user_id || ''}</td></tr>`)}</tbody></table>`
          : html`<p class="muted">No memory was accessed yet.</p>`}</section>`}
    ${f.user_id ? html`<${Similarity} f=${f} /><${Clusters} f=${f} />`
      : html`<${Notice}>Name a user for the similarity heatmap and their topics.</${Notice}>`}`;
}
