// The dashboard's shell: navigation, the API key prompt, and the page of the current route.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { apiKey, onUnauthorized, setApiKey } from './api.js';
import { navigate, useRoute } from './route.js';
import { html } from './ui.js';
import { Memories } from './pages/memories.js';
import { Recall } from './pages/recall.js';
import { Declarative } from './pages/declarative.js';
import { Graph } from './pages/graph.js';
import { Analytics } from './pages/analytics.js';
import { Operations } from './pages/operations.js';
import './style.css';

const PAGES = [
  ['memories', 'Memories', Memories],
  ['recall', 'Recall playground', Recall],
  ['declarative', 'Declarative', Declarative],
  ['graph', 'Graph', Graph],
  ['analytics', 'Analytics', Analytics],
  ['operations', 'Operations', Operations],
];

// The filters a user's pages share, carried from page to page.
const SHARED = ['namespace', 'user_id'];

function KeyPrompt({ onDone }) {
  const [key, setKey] = useState('');
  const submit = (e) => {
    e.preventDefault();
    setApiKey(key.trim());
    onDone();
  };
  return html`<form class="keyprompt" onSubmit=${submit} aria-labelledby="key-title">
    <h2 id="key-title">API key</h2>
    <p>This server needs an API key. It is kept for this browser session only.</p>
    <label class="field" for="api-key"><span>Key</span>
      <input id="api-key" type="password" autocomplete="off" value=${key}
        onInput=${(e) => setKey(e.currentTarget.value)} required /></label>
    <button type="submit">Use key</button>
  </form>`;
}

function App() {
  const route = useRoute();
  const [needKey, setNeedKey] = useState(false);
  const [epoch, setEpoch] = useState(0);
  useEffect(() => onUnauthorized(() => setNeedKey(true)), []);
  const found = PAGES.find(([id]) => id === route.page);
  const shared = {};
  SHARED.forEach((k) => route.params.get(k) && (shared[k] = route.params.get(k)));
  const go = (e, id) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return;
    e.preventDefault();
    navigate(id, shared);
  };
  const href = (id) => `/ui/${id}${new URLSearchParams(shared).size ? `?${new URLSearchParams(shared)}` : ''}`;
  const Page = found && found[2];
  return html`<header>
      <a class="brand" href="/ui/memories">muisti</a>
      <nav aria-label="pages">
        ${PAGES.map(
          ([id, label]) =>
            html`<a href=${href(id)} onClick=${(e) => go(e, id)}
              aria-current=${route.page === id ? 'page' : undefined}>${label}</a>`,
        )}
      </nav>
      ${apiKey() &&
      html`<button type="button" class="link" onClick=${() => {
        setApiKey('');
        setEpoch(epoch + 1);
      }}>Forget key</button>`}
    </header>
    <main id="main">
      ${needKey &&
      html`<${KeyPrompt} onDone=${() => {
        setNeedKey(false);
        setEpoch(epoch + 1);
      }} />`}
      ${Page
        ? html`<${Page} key=${`${route.page}-${epoch}`} params=${route.params} />`
        : html`<div class="error" role="alert">No page ${route.page}.
            <a href="/ui/memories">Memories</a></div>`}
    </main>
    <footer><a href="/ui/assets/third-party-licenses.txt">Third-party licences</a></footer>`;
}

const root = document.getElementById('app');
root.textContent = '';
render(html`<${App} />`, root);
