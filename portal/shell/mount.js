// Provider pages: load the provider's module from its UI proxy, wait for
// it to define <wharf-provider-<name>>, and mount a fresh element with
// its context and api (see sdk/ui.go for the contract).
import { providerAPI } from "./api.js";
import { h, replace } from "./dom.js";
import { href } from "./route.js";

// DEFINE_TIMEOUT: how long a provider's script has to define its element.
const DEFINE_TIMEOUT = 5000;

// loads remembers each provider's module import, so that switching
// workspace or sub-route never imports it twice.
const loads = new Map();

function load(name) {
  if (!loads.has(name)) {
    const p = import(`/ui/providers/${name}/main.js`);
    p.catch(() => loads.delete(name)); // a later visit may retry
    loads.set(name, p);
  }
  return loads.get(name);
}

// current is the mounted element, to update its sub-route in place.
let current = null;

export function renderProvider(main, ctx, signal) {
  const name = ctx.route.provider;
  const tag = `wharf-provider-${name}`;
  const ws = ctx.ws;
  const basePath = `/ui/providers/${name}`;
  const contextFor = () => Object.freeze({
    user: ctx.session.user,
    groups: Object.freeze([...(ctx.whoami.groups || ctx.session.groups || [])]),
    workspace: ws.path,
    cluster: ws.cluster,
    basePath,
    subRoute: ctx.route.subRoute,
    search: window.location.search,
    hash: window.location.hash,
  });
  // Same element, same workspace: only the sub-route moved (a provider's
  // own navigation). Keep the element; hand it a new context.
  if (current && current.el && current.el.isConnected && current.name === name && current.ws === ws.path) {
    current.el.context = contextFor();
    return;
  }
  const status = h("p", { class: "muted loading" }, `Loading ${name}…`);
  const panel = h("section", { class: "provider-panel", testid: "provider-panel", dataset: { provider: name, wsPath: ws.path },
    "aria-label": `${name} provider` }, status);
  const titleOf = () => {
    const e = ctx.catalog.find((x) => x.metadata.name === name);
    return (e && e.spec && e.spec.displayName) || name;
  };
  const title = h("h1", {}, titleOf());
  ctx.onChange.add(() => { title.textContent = titleOf(); });
  // Its UI loads anywhere, but its backend answers only where it is
  // enabled: say so rather than let the element fail mysteriously.
  const notice = h("p", { class: "banner info", testid: "provider-not-enabled", hidden: true },
    `${name} is not enabled in ${ws.path}. `, h("a", { href: href("/ui/catalog", ws.path), "data-nav": true }, "Enable it in the catalog"));
  const checkEnabled = () => {
    const synced = ctx.bindingsSynced;
    notice.hidden = !synced || ctx.bindings.some((b) => b.spec && b.spec.provider === name);
  };
  ctx.onChange.add(checkEnabled);
  checkEnabled();
  replace(main,
    h("div", { class: "page-head" },
      h("div", {}, h("p", { class: "eyebrow" }, `Provider in ${ws.path}`), title)),
    notice,
    panel);
  current = { name, ws: ws.path, el: null };
  const mine = current;

  const fail = (msg) => {
    if (signal.aborted) return;
    replace(panel, h("div", { class: "banner error", role: "alert", testid: "provider-error" }, msg,
      " ", h("a", { href: href("/ui/catalog", ws.path), "data-nav": true }, "Open the catalog")));
  };
  let timer;
  const defined = Promise.race([
    customElements.whenDefined(tag),
    new Promise((_, rej) => { timer = setTimeout(() => rej(new Error("timeout")), DEFINE_TIMEOUT); }),
  ]);
  load(name).catch((e) => {
    clearTimeout(timer);
    fail(`The script of provider ${name} could not be loaded (${basePath}/main.js): ${e.message}. Is ${name} enabled and running in ${ws.path}?`);
    throw e;
  }).then(() => defined).then(() => {
    clearTimeout(timer);
    if (signal.aborted) return;
    // The groups this provider owns, by the hub's rule
    // (hub/enablement.ProviderOfGroup): of the entries claiming a group,
    // the oldest (then the first by name) owns it. A manifest claiming
    // another provider's group must not get the CSRF header for it.
    const groups = () => {
      const claims = (x) => ((x && x.spec && x.spec.apis) || []).map((a) => a.group).filter(Boolean);
      const e = ctx.catalog.find((x) => x.metadata.name === name);
      if (!e) return [];
      const born = (x) => Date.parse(x.metadata.creationTimestamp || "") || 0;
      const before = (o) => born(o) < born(e) || (born(o) === born(e) && o.metadata.name < e.metadata.name);
      return [...new Set(claims(e).filter((g) => !ctx.catalog.some((o) => o !== e && before(o) && claims(o).includes(g))))];
    };
    const el = document.createElement(tag);
    el.context = contextFor();
    el.api = providerAPI(name, ws.path, groups);
    el.addEventListener("wharf-navigate", (e) => {
      const p = e.detail && typeof e.detail.path === "string" ? e.detail.path : "/";
      if (!p.startsWith("/") || p.startsWith("//")) return;
      ctx.navigate(href(basePath + p, ws.path));
    });
    mine.el = el;
    replace(panel, el);
  }, (e) => {
    if (e && e.message === "timeout") {
      fail(`Provider ${name} did not define itself: its script loaded but <${tag}> was not defined within ${DEFINE_TIMEOUT / 1000} s.`);
    }
  });
}
