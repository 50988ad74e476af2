// The portal shell: boot, routing and the chrome (sidebar, workspace
// tree and switcher). Pages live in their own modules. Import order
// matters: api.js must load first, before any provider script, to take
// the CSRF token and the browser's fetch (see api.js).
import { hubFetch, json, watch, hasCSRF, forgetCSRF, HubError } from "./api.js";
import { h, replace, icon } from "./dom.js";
import { renderSignin, renderError, markSigninStarted, signinJustHappened } from "./signin.js";
import { renderOverview } from "./overview.js";
import { renderCatalog } from "./catalog.js";
import { renderProvider } from "./mount.js";
import { parseRoute, href, encodeWs } from "./route.js";

const root = document.documentElement;
const app = document.getElementById("app");
const setState = (s) => { root.dataset.wharfState = s; };

const WS_COOKIE = "__Host-wharf_workspace";

function readCookie(name) {
  for (const part of document.cookie.split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === name) return v.join("=");
  }
  return "";
}

// The shell's state. ws is the current workspace {path, cluster}.
const ctx = {
  session: null, whoami: null, ws: null, route: null,
  catalog: [], catalogLive: false, catalogError: null, bindings: [], bindingsError: null,
  navigate, setWorkspace, refreshWhoami, renderNav: () => renderNav(), onChange: new Set(),
};

function changed() { for (const f of ctx.onChange) f(); renderNav(); }

async function boot() {
  setState("loading");
  let session = null;
  try {
    session = await json("/auth/session");
  } catch (e) {
    if (!(e instanceof HubError) || e.code !== 401) return fatal(`The hub could not be reached: ${e.message}`);
  }
  if (!session) {
    if (signinJustHappened()) {
      // A 401 right after signing in: say so, never loop back to the IdP.
      return fatal("Signing in did not complete: the hub has no session for this browser. The sign-in may have been cancelled, your account may not be allowed here, or your browser refused the session cookie.");
    }
    let wk = { tokenLogin: false };
    try { wk = await json("/.well-known/wharf"); } catch { /* show what we can */ }
    setState("signin");
    renderSignin(app, { oidc: !!wk.oidc, tokenLogin: !!wk.tokenLogin, onToken: tokenSignin });
    return;
  }
  signinJustHappened(); // clear the marker
  ctx.session = session;
  try {
    await refreshWhoami();
  } catch (e) {
    if (e instanceof HubError && e.code === 401) return fatal("Your session is no longer accepted by the hub. Sign in again.");
    return fatal(`The hub could not tell who you are: ${e.message}`);
  }
  window.addEventListener("popstate", () => render());
  document.addEventListener("click", onLinkClick);
  render();
}

function fatal(msg) {
  setState("error");
  renderError(app, msg, async () => {
    // End whatever session there is, so that the reload shows the
    // sign-in page rather than the same error.
    markSigninStarted(false);
    try { await hubFetch("/auth/logout", { method: "POST" }); } catch { /* reload anyway */ }
    window.location.reload();
  });
}

async function tokenSignin(token) {
  const r = await hubFetch("/auth/token-session", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token }),
  });
  if (r.status === 204) {
    markSigninStarted(true);
    // A fresh top-level load: the hub writes the CSRF token into that
    // document only. The URL, query and fragment are kept.
    window.location.reload();
    return null;
  }
  if (r.status === 401) return "That token was not accepted.";
  let msg = `${r.status}`;
  try { msg = (await r.json()).message || msg; } catch { /* keep the code */ }
  return `Sign-in failed: ${msg}`;
}

async function refreshWhoami() {
  ctx.whoami = await json("/api/whoami");
  ctx.whoami.workspaces = ctx.whoami.workspaces || [];
}

function workspaceOf(path) {
  const w = ctx.whoami.workspaces.find((x) => x.path === path || x.cluster === path);
  return w || { path, cluster: "" };
}

function pickWorkspace(route) {
  const list = ctx.whoami.workspaces;
  const wanted = route.ws || readCookie(WS_COOKIE);
  if (wanted) return workspaceOf(wanted);
  if (ctx.whoami.home) return ctx.whoami.home;
  return list[0] || { path: "root", cluster: "" };
}

// navigate goes to a portal URL without a reload.
function navigate(url, replaceState = false) {
  if (replaceState) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  render();
}

function setWorkspace(path) {
  const r = parseRoute();
  // The provider sub-route belongs to the old workspace's data: go to
  // the provider's start page.
  const base = r.page === "provider" ? `/ui/providers/${r.provider}/` : window.location.pathname;
  navigate(href(base, path));
}

function onLinkClick(e) {
  const a = e.target.closest && e.target.closest("a[data-nav]");
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  navigate(a.getAttribute("href"));
  document.body.classList.remove("nav-open");
}

let watches = null; // AbortController of the chrome's watches
let watchedWs = "";

function startWatches() {
  if (watches && watchedWs === ctx.ws.path) return;
  if (watches) watches.abort();
  watches = new AbortController();
  watchedWs = ctx.ws.path;
  const signal = watches.signal;
  watch("/clusters/root/apis/providers.wharf.dev/v1alpha1/catalogentries", {
    signal,
    onSync: (items) => { ctx.catalog = items.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)); ctx.catalogError = null; changed(); },
    onState: (open, err) => { ctx.catalogLive = open; if (err) ctx.catalogError = err.message; changed(); },
  });
  watch(`/clusters/${ctx.ws.path}/apis/providers.wharf.dev/v1alpha1/providerbindings`, {
    signal,
    onSync: (items) => { ctx.bindings = items; ctx.bindingsSynced = true; ctx.bindingsError = null; changed(); },
    onState: (_open, err) => { if (err) { ctx.bindingsError = err.message; changed(); } },
  });
}

let mainEl = null;
let navEl = null;
let pageAbort = null;

function render() {
  const route = parseRoute();
  const ws = pickWorkspace(route);
  if (route.ws !== ws.path) {
    // Always name the workspace in the URL, so the page is bookmarkable.
    // Keep the rest of the query byte for byte: it is the deep link's.
    const rest = window.location.search.replace(/^\?/, "").split("&").filter((kv) => kv && !kv.startsWith("ws=")).join("&");
    history.replaceState(null, "", `${window.location.pathname}?${rest ? rest + "&" : ""}ws=${encodeWs(ws.path)}${window.location.hash}`);
    route.ws = ws.path;
  }
  document.cookie = `${WS_COOKIE}=${ws.path}; Path=/; Secure; SameSite=Strict; Max-Age=31536000`;
  const wsChanged = !ctx.ws || ctx.ws.path !== ws.path;
  ctx.ws = ws;
  ctx.route = route;
  if (wsChanged) { ctx.bindings = []; ctx.bindingsSynced = false; }
  if (!mainEl) renderChrome();
  startWatches();
  renderNav();
  if (pageAbort) pageAbort.abort();
  pageAbort = new AbortController();
  ctx.onChange.clear();
  const signal = pageAbort.signal;
  setState("ready");
  if (route.page === "catalog") renderCatalog(mainEl, ctx, signal);
  else if (route.page === "provider") renderProvider(mainEl, ctx, signal);
  else renderOverview(mainEl, ctx, signal);
  if (!hasCSRF()) {
    mainEl.prepend(h("p", { class: "banner warn", role: "status" },
      "This page could not get its request token from the hub, so changes will be refused. Reload the page; if this stays, your browser does not send Fetch Metadata headers."));
  }
}

function renderChrome() {
  navEl = h("nav", { class: "nav", "aria-label": "Portal" });
  mainEl = h("main", { id: "main", class: "main", tabindex: "-1" });
  const user = ctx.session.user;
  const sidebar = h("aside", { class: "sidebar", testid: "sidebar", id: "sidebar" },
    h("div", { class: "brand" }, h("span", { class: "logo", "aria-hidden": "true" }, "W"), h("span", {}, "Wharf")),
    navEl,
    h("div", { class: "account" },
      h("div", { class: "who" },
        h("span", { class: "avatar", "aria-hidden": "true" }, (user[0] || "?").toUpperCase()),
        h("span", { class: "user", testid: "user-name", title: user }, user)),
      h("button", { class: "btn ghost", testid: "signout", type: "button", onclick: signOut }, icon("out"), "Sign out")));
  const top = h("header", { class: "topbar" },
    h("button", { class: "btn ghost menu", type: "button", "aria-controls": "sidebar", "aria-label": "Menu",
      onclick: () => document.body.classList.toggle("nav-open") }, icon("menu")),
    h("span", { class: "brand small" }, "Wharf"));
  replace(app,
    h("a", { class: "skip", href: "#main" }, "Skip to content"),
    top,
    h("div", { class: "layout" }, sidebar, mainEl));
}

function renderNav() {
  if (!navEl) return;
  const ws = ctx.ws.path;
  const r = ctx.route;
  const link = (path, label, ic, testid, current, extra = {}) =>
    h("a", { href: href(path, ws), "data-nav": true, class: "navlink", testid, "aria-current": current ? "page" : null, ...extra }, icon(ic), h("span", {}, label));
  const enabled = new Set(ctx.bindings.map((b) => b.spec && b.spec.provider));
  const providers = ctx.catalog.filter((e) => enabled.has(e.metadata.name) && e.status && e.status.endpoints && e.status.endpoints.ui);
  replace(navEl,
    h("label", { class: "label", for: "ws-switcher" }, "Workspace"),
    switcher(),
    link("/ui/", "Overview", "home", "nav-overview", r.page === "overview"),
    link("/ui/catalog", "Catalog", "grid", "nav-catalog", r.page === "catalog"),
    providers.length ? h("div", { class: "label" }, "Providers") : null,
    providers.map((e) => link(`/ui/providers/${e.metadata.name}/`, (e.spec && e.spec.displayName) || e.metadata.name, "plug", "nav-provider",
      r.page === "provider" && r.provider === e.metadata.name, { dataset: { provider: e.metadata.name } })),
    h("div", { class: "label" }, "Workspaces"),
    tree());
}

function switcher() {
  const paths = new Set(ctx.whoami.workspaces.map((w) => w.path));
  paths.add(ctx.ws.path);
  const sel = h("select", { id: "ws-switcher", testid: "ws-switcher", class: "switcher",
    onchange: (e) => setWorkspace(e.target.value) },
  // A workspace's own name comes first: every path under a person's home
  // shares a long prefix, and a select can only cut text at its end.
  [...paths].sort().map((p) => h("option", { value: p, selected: p === ctx.ws.path, title: p }, optionLabel(p))));
  return sel;
}

// optionLabel is "name · parent path" for nested workspaces, the path itself
// for a top-level one.
function optionLabel(path) {
  const i = path.lastIndexOf(":");
  return i < 0 ? path : `${path.slice(i + 1)} · ${path.slice(0, i)}`;
}

// tree renders the accessible workspaces as a tree by path; ancestors the
// caller cannot access are shown as plain labels.
function tree() {
  const nodes = new Map();
  const node = (path) => {
    if (!nodes.has(path)) nodes.set(path, { path, name: path.split(":").pop(), children: [], access: false });
    return nodes.get(path);
  };
  const top = new Set();
  for (const w of ctx.whoami.workspaces) {
    const parts = w.path.split(":");
    node(w.path).access = true;
    for (let i = 1; i < parts.length; i++) {
      const parent = parts.slice(0, i).join(":");
      const child = parts.slice(0, i + 1).join(":");
      const pn = node(parent);
      if (!pn.children.includes(child)) pn.children.push(child);
    }
    top.add(parts[0]);
  }
  const item = (path) => {
    const n = nodes.get(path);
    const cur = path === ctx.ws.path;
    const label = n.access
      ? h("a", { href: href(parseRoute().page === "catalog" ? "/ui/catalog" : "/ui/", path), "data-nav": true, class: "treelink",
        testid: "ws-tree-item", dataset: { wsPath: path }, "aria-current": cur ? "page" : null, title: path }, icon("folder"), h("span", {}, n.name))
      : h("span", { class: "treelabel", title: `${path} (no access)` }, icon("folder"), h("span", {}, n.name));
    return h("li", {}, label, n.children.length ? h("ul", {}, n.children.sort().map(item)) : null);
  };
  return h("ul", { class: "tree", testid: "ws-tree" }, [...top].sort().map(item));
}

async function signOut() {
  try {
    await hubFetch("/auth/logout", { method: "POST" });
  } finally {
    forgetCSRF();
    if (watches) watches.abort();
    window.location.reload();
  }
}

boot();
