// A hostile provider UI. It runs in the portal's origin, as every provider
// UI does, and tries to find the person's credentials: the session cookie,
// the CSRF token and any Authorization header. It reports everything it
// read into [data-testid=probe-report]; the test asserts that none of it
// holds a secret, and that planted canaries were found (so the probe
// really looks where it claims to).

const seenHeaders = [];

function recordHeaders(where, h) {
  if (!h) return;
  try {
    const entries = h instanceof Headers ? [...h.entries()]
      : Array.isArray(h) ? h : Object.entries(h);
    for (const [k, v] of entries) seenHeaders.push({ where, name: String(k), value: String(v) });
  } catch (e) {
    seenHeaders.push({ where, name: "error", value: String(e) });
  }
}

// Wrap everything a shell might send a header through, at module load,
// before the shell hands this element its api.
const realFetch = window.fetch;
window.fetch = function (input, init) {
  if (input instanceof Request) recordHeaders("fetch(Request)", input.headers);
  if (init) recordHeaders("fetch(init)", init.headers);
  return realFetch.apply(this, arguments);
};
const realSetHeader = XMLHttpRequest.prototype.setRequestHeader;
XMLHttpRequest.prototype.setRequestHeader = function (k, v) {
  seenHeaders.push({ where: "xhr", name: String(k), value: String(v) });
  return realSetHeader.call(this, k, v);
};
for (const m of ["set", "append"]) {
  const real = Headers.prototype[m];
  Headers.prototype[m] = function (k, v) {
    seenHeaders.push({ where: "Headers." + m, name: String(k), value: String(v) });
    return real.call(this, k, v);
  };
}
const RealRequest = window.Request;
window.Request = function (input, init) {
  if (init) recordHeaders("new Request", init.headers);
  return new RealRequest(input, init);
};
window.Request.prototype = RealRequest.prototype;

// A setter on Object.prototype catches a shell that assigns a header to a
// plain object (h["X-Wharf-CSRF"] = token); it then defines the property
// on the receiver so that the shell keeps working.
for (const name of ["X-Wharf-CSRF", "x-wharf-csrf", "Authorization", "authorization"]) {
  Object.defineProperty(Object.prototype, name, {
    configurable: true,
    set(v) {
      seenHeaders.push({ where: "Object.prototype setter", name, value: String(v) });
      Object.defineProperty(this, name, { value: v, writable: true, enumerable: true, configurable: true });
    },
  });
}

function dumpStorage(s) {
  const out = {};
  try {
    for (let i = 0; i < s.length; i++) out[s.key(i)] = s.getItem(s.key(i));
  } catch (e) {
    out.error = String(e);
  }
  return out;
}

// Every string reachable from window's own properties, one level into
// objects, as a thief scanning for token-shaped values would.
function scanGlobals() {
  const out = {};
  for (const name of Object.getOwnPropertyNames(window)) {
    let v;
    try { v = window[name]; } catch { continue; }
    if (typeof v === "string" && v.length > 0) out[name] = v;
    else if (v && typeof v === "object" && !(v instanceof Node) && v !== window) {
      try {
        for (const k of Object.keys(v).slice(0, 50)) {
          const x = v[k];
          if (typeof x === "string" && x.length > 0) out[name + "." + k] = x.slice(0, 2000);
        }
      } catch { /* cross-origin or hostile getters */ }
    }
  }
  return out;
}

function describe(obj) {
  const out = {};
  if (!obj) return out;
  for (let o = obj; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const k of Object.getOwnPropertyNames(o)) {
      if (k in out) continue;
      try {
        const v = obj[k];
        out[k] = typeof v === "function" ? "function " + v.toString().slice(0, 2000) : JSON.stringify(v);
      } catch (e) {
        out[k] = "unreadable: " + e;
      }
    }
  }
  return out;
}

class PortalProbe extends HTMLElement {
  connectedCallback() {
    // The shell sets context and api right after mounting; give it a turn.
    setTimeout(() => this.probe(), 500);
  }

  async probe() {
    const report = {
      cookie: document.cookie,
      localStorage: dumpStorage(localStorage),
      sessionStorage: dumpStorage(sessionStorage),
      globals: scanGlobals(),
      dom: document.documentElement.outerHTML,
      context: this.context === undefined ? null : JSON.parse(JSON.stringify(this.context)),
      api: describe(this.api),
    };
    try {
      const r = await realFetch("/auth/session", { credentials: "same-origin" });
      report.authSession = { status: r.status, body: await r.text() };
    } catch (e) {
      report.authSession = { error: String(e) };
    }
    try {
      // The shell's own fetch, through which it adds what it adds: the
      // wrappers above see every header it passes through the globals.
      const r = await this.api.fetch("/services/providers/portalprobe/headers");
      report.apiFetch = { status: r.status, backendSaw: await r.json() };
    } catch (e) {
      report.apiFetch = { error: String(e) };
    }
    try {
      // A state-changing request, for which the shell adds its CSRF header.
      const r = await this.api.fetch("/services/providers/portalprobe/headers", {
        method: "POST", headers: { "Content-Type": "application/json" }, body: "{}",
      });
      report.apiPost = { status: r.status, backendSaw: await r.json() };
    } catch (e) {
      report.apiPost = { error: String(e) };
    }
    try {
      // The same POST without the shell: the cookie goes along (same
      // origin), the CSRF token cannot, so the hub must refuse it.
      const r = await realFetch("/services/providers/portalprobe/headers", {
        method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" }, body: "{}",
      });
      report.plainPost = { status: r.status };
    } catch (e) {
      report.plainPost = { error: String(e) };
    }
    report.seenHeaders = seenHeaders;
    const pre = document.createElement("pre");
    pre.dataset.testid = "probe-report";
    pre.textContent = JSON.stringify(report);
    pre.hidden = true;
    const p = document.createElement("p");
    p.textContent = "Probe finished.";
    this.replaceChildren(p, pre);
  }
}

customElements.define("wharf-provider-portalprobe", PortalProbe);
