// Every page and filter has an address: `/ui/<page>?<filters>`. The route is read from the
// location; pages change it with navigate(), so the back button and shared links work.
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/ui';

export function current() {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : '';
  const page = path.replace(/^\/+|\/+$/g, '') || 'memories';
  return { page, params: new URLSearchParams(location.search) };
}

const listeners = new Set();

// Goes to a page with these parameters (empty ones dropped); `replace` keeps one history
// entry (for typing in a filter).
export function navigate(page, params = {}, { replace = false } = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '' || v === false) continue;
    if (Array.isArray(v)) v.forEach((x) => x !== '' && q.append(k, x));
    else q.append(k, String(v));
  }
  const s = q.toString();
  const url = `${BASE}/${page}${s ? `?${s}` : ''}`;
  if (url === location.pathname + location.search) return;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  listeners.forEach((f) => f());
}

export function useRoute() {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const update = () => setRoute(current());
    listeners.add(update);
    addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      removeEventListener('popstate', update);
    };
  }, []);
  return route;
}

// The parameters of the current route as a plain object (repeated ones as arrays for `multi`).
export function paramsOf(params, multi = []) {
  const out = {};
  for (const k of new Set(params.keys())) {
    out[k] = multi.includes(k) ? params.getAll(k) : params.get(k);
  }
  return out;
}
