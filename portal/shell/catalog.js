// The catalog: every provider the hub runs (CatalogEntries in root, live)
// and whether it is enabled in the current workspace (a ProviderBinding
// there), with enable and disable where RBAC allows.
import { json } from "./api.js";
import { h, replace, ago } from "./dom.js";
import { can } from "./access.js";
import { href } from "./route.js";

const PB_API = "/apis/providers.wharf.dev/v1alpha1/providerbindings";

function ready(e) {
  const c = ((e.status && e.status.conditions) || []).find((x) => x.type === "Ready");
  return { ok: !!c && c.status === "True", why: c ? c.message || c.reason || "" : "no status yet", since: c && c.lastTransitionTime };
}

export function renderCatalog(main, ctx, signal) {
  const ws = ctx.ws.path;
  const user = ctx.session.user;
  const banner = h("p", { class: "banner error", role: "alert", testid: "catalog-error", hidden: true });
  const rbac = h("p", { class: "banner info", testid: "catalog-rbac", hidden: true });
  const live = h("span", { class: "live", testid: "catalog-live", dataset: { live: "false" } }, "connecting…");
  const body = h("tbody", {});
  const perms = { create: null, delete: null };
  let busy = "";

  const showError = (msg) => { banner.textContent = msg; banner.hidden = !msg; };

  const draw = () => {
    live.dataset.live = String(ctx.catalogLive);
    live.textContent = ctx.catalogLive ? "live" : "reconnecting…";
    live.classList.toggle("on", ctx.catalogLive);
    if (ctx.catalogError && !ctx.catalog.length) showError(ctx.catalogError);
    const bound = new Map(ctx.bindings.map((b) => [b.spec && b.spec.provider, b]));
    if (!ctx.catalog.length) {
      replace(body, h("tr", {}, h("td", { colspan: 7, class: "muted" }, ctx.catalogLive ? "No providers are loaded by this hub." : "Loading…")));
      return;
    }
    replace(body, ctx.catalog.map((e) => {
      const name = e.metadata.name;
      const st = e.status || {};
      const r = ready(e);
      const binding = bound.get(name);
      const hasUI = !!(st.endpoints && st.endpoints.ui);
      const action = binding
        ? h("button", { class: "btn ghost danger", type: "button", testid: "provider-disable", disabled: busy === name || perms.delete === false,
          title: perms.delete === false ? `You may not disable providers in ${ws}` : `Disable ${name} in ${ws}`,
          onclick: () => toggle(name, binding) }, "Disable")
        : h("button", { class: "btn primary", type: "button", testid: "provider-enable", disabled: busy === name || perms.create === false,
          title: perms.create === false ? `You may not enable providers in ${ws}` : `Enable ${name} in ${ws}`,
          onclick: () => toggle(name, null) }, "Enable");
      return h("tr", { testid: "catalog-row", dataset: { provider: name } },
        h("td", { class: "provider" },
          h("div", { class: "pname" }, (e.spec && e.spec.displayName) || name),
          h("div", { class: "muted small" }, (e.spec && e.spec.description) || name)),
        h("td", { testid: "catalog-version", "data-label": "Version" }, h("code", {}, st.version || (e.spec && e.spec.version) || "—")),
        h("td", { "data-label": "Health" }, h("span", { class: `pill ${r.ok ? "ok" : "bad"}`, testid: "catalog-ready", title: r.why }, r.ok ? "Ready" : "Not ready"),
          r.since ? h("div", { class: "muted small" }, ago(r.since)) : null),
        h("td", { testid: "catalog-restarts", class: "num", "data-label": "Restarts" }, String(st.restartCount || 0)),
        h("td", { testid: "catalog-replica", "data-label": "Hub replica" }, st.hubReplica || "—"),
        h("td", { "data-label": "This workspace" }, h("span", { class: `pill ${binding ? "ok" : "off"}`, testid: "catalog-enabled" }, binding ? "Enabled" : "Not enabled")),
        h("td", { class: "actions" },
          binding && hasUI ? h("a", { class: "btn ghost", href: href(`/ui/providers/${name}/`, ws), "data-nav": true, testid: "catalog-open" }, "Open") : null,
          action));
    }));
  };

  const toggle = async (name, binding) => {
    busy = name;
    showError("");
    draw();
    try {
      if (binding) {
        await json(`/clusters/${ws}${PB_API}/${encodeURIComponent(binding.metadata.name)}`, { method: "DELETE" });
      } else {
        await json(`/clusters/${ws}${PB_API}`, { method: "POST",
          body: { apiVersion: "providers.wharf.dev/v1alpha1", kind: "ProviderBinding", metadata: { name }, spec: { provider: name } } });
      }
    } catch (x) {
      // RBAC and admission messages are shown as the hub wrote them.
      showError(x.message);
    } finally {
      busy = "";
      draw();
    }
  };

  replace(main,
    h("div", { class: "page-head" },
      h("div", {}, h("p", { class: "eyebrow" }, `Providers for ${ws}`), h("h1", {}, "Catalog")),
      live),
    rbac,
    banner,
    h("section", { class: "card" }, h("div", { class: "table-wrap" }, h("table", { class: "table", testid: "catalog-table" },
      h("thead", {}, h("tr", {}, h("th", {}, "Provider"), h("th", {}, "Version"), h("th", {}, "Health"), h("th", { class: "num" }, "Restarts"),
        h("th", {}, "Hub replica"), h("th", { title: ws }, "This workspace"), h("th", { class: "actions" }, h("span", { class: "sr-only" }, "Actions")))),
      body))));
  ctx.onChange.add(draw);
  draw();
  Promise.all([
    can(ws, user, "create", "providers.wharf.dev", "providerbindings"),
    can(ws, user, "delete", "providers.wharf.dev", "providerbindings"),
  ]).then(([c, d]) => {
    if (signal.aborted) return;
    perms.create = c;
    perms.delete = d;
    if (!c || !d) {
      rbac.textContent = `You may not ${!c && !d ? "enable or disable" : !c ? "enable" : "disable"} providers in ${ws}: that needs RBAC ${!c ? "create" : ""}${!c && !d ? " and " : ""}${!d ? "delete" : ""} on providerbindings.providers.wharf.dev there. Ask an admin of the workspace.`;
      rbac.hidden = false;
    }
    draw();
  });
}
