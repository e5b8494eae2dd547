// The one way the dashboard talks to the server: JSON over the REST API, with the API key
// of this browser session (none in open mode), and every failure as an ApiError carrying
// the server's error shape.

const KEY = 'muisti.key';

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function apiKey() {
  return sessionStorage.getItem(KEY) || '';
}

export function setApiKey(key) {
  if (key) sessionStorage.setItem(KEY, key);
  else sessionStorage.removeItem(KEY);
}

// Listeners told when the server asks for a key (401).
const unauthorized = new Set();
export function onUnauthorized(f) {
  unauthorized.add(f);
  return () => unauthorized.delete(f);
}

// A query string from an object: empty values left out, arrays repeated (`tag=a&tag=b`).
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) v.filter((x) => x !== '').forEach((x) => q.append(k, x));
    else q.append(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

export async function request(method, path, { params, body, headers } = {}) {
  const h = { Accept: 'application/json', ...(headers || {}) };
  const key = apiKey();
  if (key) h.Authorization = `Bearer ${key}`;
  if (body !== undefined) h['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path + query(params), {
      method,
      headers: h,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(0, 'unreachable', `the server could not be reached (${e.message})`);
  }
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const err = data && data.error;
    const e = new ApiError(
      res.status,
      (err && err.code) || 'error',
      (err && err.message) || `${res.status} ${res.statusText}`,
    );
    if (res.status === 401) unauthorized.forEach((f) => f(e));
    throw e;
  }
  return data;
}

export const get = (path, params) => request('GET', path, { params });
export const post = (path, body, params) => request('POST', path, { body: body ?? {}, params });
export const patch = (path, body, headers) => request('PATCH', path, { body, headers });
export const del = (path, params) => request('DELETE', path, { params });
