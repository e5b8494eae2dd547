// Pieces every page uses: the template tag, loading with errors shown, forms, confirmation
// of destructive actions, cursor paging.
import { h } from 'preact';
import { get } from './api.js';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import htm from 'htm';

export const html = htm.bind(h);

export const SCOPES = ['scratch', 'short_term', 'long_term', 'episodic', 'declarative'];
export const STATES = ['active', 'archived', 'superseded'];
export const TYPES = ['fact', 'preference', 'rule'];

// Loads with `load()` whenever `deps` change: { data, error, loading, reload }. A newer load
// wins over an older one still in flight.
export function useLoad(load, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const seq = useRef(0);
  const run = useCallback(() => {
    const n = ++seq.current;
    setState((s) => ({ ...s, loading: true, error: null }));
    Promise.resolve()
      .then(load)
      .then(
        (data) => n === seq.current && setState({ data, error: null, loading: false }),
        (error) => n === seq.current && setState({ data: null, error, loading: false }),
      );
  }, deps);
  useEffect(run, [run]);
  return { ...state, reload: run };
}

export function ErrorBox({ error }) {
  if (!error) return null;
  const code = error.code ? html`<code>${error.code}</code> ` : '';
  return html`<div class="error" role="alert">${code}${error.message || String(error)}</div>`;
}

export function Notice({ children }) {
  return html`<p class="notice" role="status">${children}</p>`;
}

let fieldSeq = 0;
function useId(prefix) {
  const id = useRef(null);
  if (!id.current) id.current = `${prefix}-${++fieldSeq}`;
  return id.current;
}

// A labelled input; `onInput` gets the value.
export function Field({ label, value, onInput, type = 'text', placeholder, name, list, ...rest }) {
  const id = useId(name || 'f');
  return html`<label class="field" for=${id}>
    <span>${label}</span>
    <input id=${id} name=${name} type=${type} value=${value ?? ''} placeholder=${placeholder}
      list=${list} onInput=${(e) => onInput(e.currentTarget.value)} ...${rest} />
  </label>`;
}

export function Select({ label, value, onChange, options, name, any = 'any' }) {
  const id = useId(name || 's');
  return html`<label class="field" for=${id}>
    <span>${label}</span>
    <select id=${id} name=${name} value=${value ?? ''} onChange=${(e) => onChange(e.currentTarget.value)}>
      ${any !== null && html`<option value="">${any}</option>`}
      ${options.map((o) => html`<option value=${o}>${o}</option>`)}
    </select>
  </label>`;
}

// A modal dialog asking to confirm a destructive action. `useConfirm()` gives the dialog to
// render and `ask(message, action)`; the action runs only on "Confirm", and its error is
// shown in the dialog.
export function useConfirm() {
  const [pending, setPending] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const ask = (message, action, label = 'Delete') => {
    setError(null);
    setPending({ message, action, label });
  };
  const close = () => setPending(null);
  const confirmButton = useRef(null);
  // Open: the confirm button has the focus; Escape cancels.
  useEffect(() => {
    if (!pending) return undefined;
    if (confirmButton.current) confirmButton.current.focus();
    const onKey = (e) => e.key === 'Escape' && setPending(null);
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [pending]);
  const confirm = async () => {
    setBusy(true);
    try {
      await pending.action();
      setPending(null);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const dialog = pending
    ? html`<div class="backdrop">
        <div class="modal" role="dialog" aria-modal="true" aria-labelledby="confirm-title">
          <h2 id="confirm-title">Are you sure?</h2>
          <p>${pending.message}</p>
          <${ErrorBox} error=${error} />
          <div class="actions">
            <button type="button" onClick=${close} disabled=${busy}>Cancel</button>
            <button type="button" class="danger" onClick=${confirm} disabled=${busy} ref=${confirmButton}>
              ${pending.label}
            </button>
          </div>
        </div>
      </div>`
    : null;
  return [dialog, ask];
}

// Previous/next over cursor pages: `cursors` is the stack of cursors that led here.
export function Pager({ cursors, next, onPage }) {
  return html`<nav class="pager" aria-label="pages">
    <button type="button" disabled=${!cursors.length} onClick=${() => onPage(cursors.slice(0, -1))}>
      ← Previous
    </button>
    <span>page ${cursors.length + 1}</span>
    <button type="button" disabled=${!next} onClick=${() => onPage([...cursors, next])}>Next →</button>
  </nav>`;
}

export function text(m) {
  return typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
}

export function when(t) {
  if (!t) return '';
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? t : d.toISOString().replace('T', ' ').slice(0, 16);
}

export function Badge({ children, kind }) {
  return html`<span class=${`badge ${kind || ''}`}>${children}</span>`;
}

// A chart drawn by the chart library, loaded on first use. `label` names it for assistive
// technology; `testid` lets the browser tests find its instance.
export function Chart({ option, label, height = 320, testid }) {
  const el = useRef(null);
  const drawn = useRef(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let alive = true;
    import('./charts.js').then(
      ({ draw }) => {
        if (!alive || !el.current) return;
        drawn.current = draw(el.current, option);
        el.current.dataset.drawn = 'true';
      },
      (e) => setError(e),
    );
    return () => {
      alive = false;
      if (drawn.current) drawn.current.dispose();
      drawn.current = null;
    };
  }, []);
  useEffect(() => {
    if (drawn.current) drawn.current.update(option);
  }, [option]);
  if (error) return html`<${ErrorBox} error=${error} />`;
  return html`<div class="chart" ref=${el} role="img" aria-label=${label} data-testid=${testid}
    style=${`height:${height}px`}></div>`;
}

// A memory's recorded changes, as the API gives them (`user` acts for a declarative entry).
export function History({ id, user }) {
  const h = useLoad(() => get(`/v1/memories/${id}/history`, { user_id: user }), [id, user]);
  if (h.error) return html`<${ErrorBox} error=${h.error} />`;
  if (!h.data) return html`<p class="loading">Loading…</p>`;
  if (!h.data.history.length) return html`<p class="muted">No recorded changes.</p>`;
  return html`<ol class="history">${h.data.history.map((e) => html`<li>
    <${Badge}>${e.event}</${Badge}> ${when(e.at)} by ${e.actor}
    ${e.confidence !== undefined && e.confidence !== null ? ` · confidence ${e.confidence}` : ''}
    ${e.old ? html`<div><del>${e.old}</del></div>` : ''}${e.new ? html`<div><ins>${e.new}</ins></div>` : ''}
  </li>`)}</ol>`;
}
