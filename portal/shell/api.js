// The shell's only door to the hub. Threat model (see portal/doc.go):
// provider scripts run in this origin, after this module. So this module
//   - takes the browser's fetch and the helpers it needs once, at load,
//     before any provider script can replace them with spies, and hands
//     fetch null-prototype options and header records only (see record);
//   - keeps the CSRF token in this module's closure only: read from the
//     shell document's <meta> (the hub writes it there on top-level
//     navigations only) and removed from the DOM at once; never stored,
//     never a global, never passed to a provider;
//   - hands providers a wrapped fetch that adds the token only to
//     state-changing requests for the provider's own backend and API
//     groups, so a provider script cannot, for example, delete a
//     workspace in the user's name.
const nativeFetch = window.fetch.bind(window);
const NativeURL = window.URL;
const NativeTextDecoder = window.TextDecoder;
const createObject = Object.create;
const objectEntries = Object.entries;
const arrayFrom = Array.from;
const origin = window.location.origin;

// record builds a header record the browser reads with internal
// operations only: a null-prototype object with own data properties (no
// Headers object, whose iterator a provider could patch, and no prototype
// whose getters it could plant).
function record(h) {
  const out = createObject(null);
  if (!h) return out;
  const pairs = typeof h[Symbol.iterator] === "function" ? arrayFrom(h) : objectEntries(h);
  for (const [k, v] of pairs) {
    const name = `${k}`.toLowerCase();
    if (name !== "x-wharf-csrf") out[name] = `${v}`;
  }
  return out;
}

let csrf = "";
{
  const meta = document.querySelector('meta[name="wharf-csrf"]');
  if (meta) {
    csrf = meta.getAttribute("content") || "";
    meta.remove();
  }
}

// hasCSRF: whether this page can make state-changing requests at all.
export const hasCSRF = () => csrf !== "";

// forgetCSRF drops the token (sign-out).
export function forgetCSRF() { csrf = ""; }

const safe = (m) => m === "GET" || m === "HEAD" || m === "OPTIONS";

// sameOriginPath resolves p against this origin; null for other origins.
function sameOriginPath(p) {
  let u;
  try { u = new NativeURL(String(p), origin); } catch { return null; }
  return u.origin === origin ? u : null;
}

// hubFetch is fetch for the shell itself: same origin only, cookies,
// and the CSRF header on every state-changing request.
export function hubFetch(path, init = {}) {
  const u = sameOriginPath(path);
  if (!u) return Promise.reject(new TypeError("the portal talks to its own hub only"));
  const method = `${init.method || "GET"}`.toUpperCase();
  const headers = record(init.headers);
  if (!safe(method) && csrf) headers["x-wharf-csrf"] = csrf;
  // A null-prototype init as well: fetch reads options this code does not
  // set (mode, referrer, …) with [[Get]], which would otherwise reach
  // getters a provider planted on Object.prototype, with this init (and
  // its headers) as their receiver.
  const req = createObject(null);
  req.method = method;
  req.headers = headers;
  if (init.body !== undefined) req.body = init.body;
  if (init.signal) req.signal = init.signal;
  req.credentials = "same-origin";
  req.redirect = "manual";
  req.cache = "no-store";
  return nativeFetch(u.href, req);
}

// HubError carries a Kubernetes Status message as is.
export class HubError extends Error {
  constructor(code, message, reason) {
    super(message);
    this.code = code;
    this.reason = reason || "";
  }
}

// json calls the hub and decodes JSON; a non-2xx answer becomes a
// HubError with the Status message the hub sent.
export async function json(path, init = {}) {
  const headers = record(init.headers);
  headers.accept = "application/json";
  let body = init.body;
  if (body !== undefined && typeof body !== "string") {
    body = JSON.stringify(body);
    headers["content-type"] = "application/json";
  }
  const r = await hubFetch(path, { ...init, headers, body });
  const text = await r.text();
  let v = null;
  try { v = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
  if (!r.ok) {
    const msg = v && v.message ? v.message : `${r.status} ${r.statusText || "error"}`;
    throw new HubError(r.status, msg, v && v.reason);
  }
  return v;
}

// watch lists path, then watches it from the list's resourceVersion,
// calling onSync(items) with the full, current item list after the list and
// after every event. It reconnects (listing again) until signal aborts.
// onState(open, err) reports whether the watch is open.
export async function watch(path, { signal, onSync, onState, fetcher = hubFetch }) {
  const items = new Map();
  const key = (o) => `${o.metadata.namespace || ""}/${o.metadata.name}`;
  let delay = 500;
  while (!signal.aborted) {
    try {
      const lr = await fetcher(path, { signal, headers: { Accept: "application/json" } });
      const list = await lr.json();
      if (!lr.ok) throw new HubError(lr.status, list && list.message ? list.message : `${lr.status}`);
      items.clear();
      for (const o of list.items || []) items.set(key(o), o);
      onSync([...items.values()]);
      const sep = path.includes("?") ? "&" : "?";
      const wr = await fetcher(`${path}${sep}watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(list.metadata.resourceVersion || "")}`, { signal });
      if (!wr.ok || !wr.body) throw new HubError(wr.status, `watch failed: ${wr.status}`);
      onState && onState(true, null);
      delay = 500;
      const reader = wr.body.getReader();
      const dec = new NativeTextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let nl;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (!line) continue;
          const ev = JSON.parse(line);
          if (ev.type === "ADDED" || ev.type === "MODIFIED") items.set(key(ev.object), ev.object);
          else if (ev.type === "DELETED") items.delete(key(ev.object));
          else if (ev.type === "ERROR") throw new HubError(ev.object.code, ev.object.message);
          else continue; // BOOKMARK
          onSync([...items.values()]);
        }
      }
      onState && onState(false, null);
    } catch (e) {
      if (signal.aborted) return;
      onState && onState(false, e);
      if (e instanceof HubError && (e.code === 401 || e.code === 403 || e.code === 404)) {
        delay = Math.min(delay * 2, 15000);
      }
    }
    await new Promise((res) => setTimeout(res, delay));
    delay = Math.min(delay * 2, 5000);
  }
}

// providerAPI is the api object a provider element gets. Reads go
// anywhere on the hub (a provider script could read with plain fetch
// anyway); state-changing requests only to the provider's own backend
// and, in the current workspace, to the API groups it owns.
// groups() returns the provider's API groups now (the catalog is live,
// and may arrive after the element is mounted).
export function providerAPI(name, workspace, groups) {
  const backend = `/services/providers/${name}/`;
  const pfetch = (path, init = {}) => {
    const apiPrefixes = groups().map((g) => `/clusters/${workspace}/apis/${g}/`);
    const u = sameOriginPath(path);
    if (!u) return Promise.reject(new TypeError("api.fetch: only this hub's paths"));
    const method = `${init.method || "GET"}`.toUpperCase();
    const p = u.pathname;
    const mine = p.startsWith(backend) || apiPrefixes.some((a) => p.startsWith(a));
    if (!safe(method) && !mine) {
      return Promise.reject(new TypeError(`api.fetch: ${method} ${p} is outside ${name}'s backend and API groups`));
    }
    const headers = record(init.headers);
    if (p.startsWith(backend)) headers["x-wharf-workspace"] = workspace;
    return hubFetch(u.pathname + u.search, { method, headers, body: init.body, signal: init.signal });
  };
  return Object.freeze({
    fetch: pfetch,
    watch: (path, opts) => watch(path, { ...opts, fetcher: pfetch }),
  });
}
