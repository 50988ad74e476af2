// The overview of the current workspace: its identity, its children
// (live), and creating or deleting children where RBAC allows.
import { json, watch, HubError } from "./api.js";
import { h, replace, icon, ago } from "./dom.js";
import { can } from "./access.js";
import { href } from "./route.js";

const WS_API = "/apis/tenancy.wharf.dev/v1alpha1/workspaces";

export function renderOverview(main, ctx, signal) {
  const ws = ctx.ws;
  const known = ctx.whoami.workspaces.some((w) => w.path === ws.path);
  if (known || ctx.whoami.truncated) {
    renderAccessible(main, ctx, signal);
    return;
  }
  // /api/whoami lists only the workspaces that name the caller: one a
  // stranger opened to every authenticated user is usable by its path but
  // not listed (README, "/api/whoami"). Ask the workspace itself; a
  // missing one and one not ours answer the same 403.
  json(`/clusters/${ws.path}/api`, { signal }).then(
    () => { if (!signal.aborted) renderAccessible(main, ctx, signal); },
    () => { if (!signal.aborted) renderMissing(main, ctx, ws); });
}

// renderMissing says once that nothing below would load, and offers a
// way back.
function renderMissing(main, ctx, ws) {
  const home = ctx.whoami.home || ctx.whoami.workspaces[0];
  replace(main,
    h("div", { class: "page-head" }, h("div", {}, h("p", { class: "eyebrow" }, "Workspace"), h("h1", { testid: "ws-current" }, ws.path))),
    h("div", { class: "banner error", role: "alert", testid: "ws-missing" },
      `Workspace ${ws.path} does not exist or you have no access to it. `,
      home ? h("a", { href: href("/ui/", home.path), "data-nav": true }, `Go to ${home.path}`) : null));
}

function renderAccessible(main, ctx, signal) {
  const ws = ctx.ws;
  const user = ctx.session.user;
  const childrenBody = h("tbody", {}, h("tr", {}, h("td", { colspan: 4, class: "muted" }, "Loading…")));
  const listError = h("p", { class: "banner error", role: "alert", hidden: true, testid: "ws-list-error" });
  const createBtn = h("button", { class: "btn primary", type: "button", testid: "ws-create-open", disabled: true,
    title: "Checking your permissions…", onclick: () => openCreate() }, icon("plus"), "New workspace");
  let mayDelete = false;
  let children = [];

  const createDialog = buildCreateDialog(ctx, ws, () => {});
  const deleteDialog = buildDeleteDialog(ctx, ws);
  const openCreate = () => createDialog.open();

  replace(main,
    h("div", { class: "page-head" },
      h("div", {},
        h("p", { class: "eyebrow" }, "Workspace"),
        h("h1", { testid: "ws-current" }, ws.path)),
      createBtn),
    h("dl", { class: "facts card" },
      fact("Path", h("code", {}, ws.path)),
      fact("Logical cluster", h("code", { testid: "ws-cluster" }, ws.cluster || "—")),
      fact("API server", h("code", {}, `${window.location.origin}/clusters/${ws.path}`)),
      fact("Signed in as", h("span", {}, user))),
    h("section", { class: "card", "aria-labelledby": "children-title" },
      h("div", { class: "card-head" }, h("h2", { id: "children-title" }, "Child workspaces")),
      listError,
      h("div", { class: "table-wrap" }, h("table", { class: "table", testid: "ws-children" },
        h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Phase"), h("th", {}, "Created"), h("th", { class: "actions" }, h("span", { class: "sr-only" }, "Actions")))),
        childrenBody))),
    h("section", { class: "card", "aria-labelledby": "kubectl-title" },
      h("h2", { id: "kubectl-title" }, "From a terminal"),
      h("pre", { class: "cmd" }, `wharf ws use ${ws.path}\nkubectl get workspaces`)),
    createDialog.el, deleteDialog.el);

  const draw = () => {
    if (!children.length) {
      replace(childrenBody, h("tr", {}, h("td", { colspan: 4, class: "muted" }, "No child workspaces yet.")));
      return;
    }
    replace(childrenBody, children.map((w) => {
      const name = w.metadata.name;
      const path = (w.status && w.status.path) || `${ws.path}:${name}`;
      const phase = (w.status && w.status.phase) || "Pending";
      return h("tr", { testid: "ws-child", dataset: { wsName: name } },
        h("td", {}, h("a", { href: href("/ui/", path), "data-nav": true }, name)),
        h("td", { "data-label": "Phase" }, h("span", { class: `pill ${phase === "Ready" ? "ok" : phase === "Terminating" ? "bad" : "wait"}`, testid: "ws-child-phase" }, phase)),
        h("td", { class: "muted", "data-label": "Created" }, ago(w.metadata.creationTimestamp)),
        h("td", { class: "actions" }, mayDelete && phase !== "Terminating" ? h("button", {
          class: "btn ghost danger", type: "button", testid: "ws-child-delete", "aria-label": `Delete ${name}`,
          onclick: () => deleteDialog.open(name),
        }, "Delete") : null));
    }));
  };

  can(ws.path, user, "create", "tenancy.wharf.dev", "workspaces").then((ok) => {
    createBtn.disabled = !ok;
    createBtn.title = ok ? "Create a child workspace" : `You may not create workspaces in ${ws.path}`;
  });
  can(ws.path, user, "delete", "tenancy.wharf.dev", "workspaces").then((ok) => { mayDelete = ok; draw(); });
  watch(`/clusters/${ws.path}${WS_API}`, {
    signal,
    onSync: (items) => {
      listError.hidden = true;
      children = items.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
      draw();
      // New children appear in the tree once they are Ready.
      const paths = new Set(ctx.whoami.workspaces.map((w) => w.path));
      if (items.some((w) => w.status && w.status.phase === "Ready" && w.status.path && !paths.has(w.status.path))) {
        ctx.refreshWhoami().then(() => ctx.renderNav(), () => {});
      }
    },
    onState: (_open, err) => {
      if (err) {
        listError.textContent = err.message;
        listError.hidden = false;
        if (!children.length) replace(childrenBody, h("tr", {}, h("td", { colspan: 4, class: "muted" }, "—")));
      }
    },
  });
}

function fact(k, v) {
  return h("div", { class: "fact" }, h("dt", {}, k), h("dd", {}, v));
}

function buildCreateDialog(ctx, ws) {
  const name = h("input", { id: "ws-name", name: "name", required: true, testid: "ws-create-name", autocomplete: "off",
    pattern: "[a-z0-9]([\\-a-z0-9]*[a-z0-9])?", maxlength: 63, placeholder: "team-a", spellcheck: "false" });
  const enter = h("input", { id: "ws-enter", type: "checkbox", checked: true });
  const err = h("p", { class: "form-error", testid: "ws-create-error", role: "alert", hidden: true });
  const submit = h("button", { class: "btn primary", type: "submit", testid: "ws-create-submit" }, "Create");
  const el = h("dialog", { class: "dialog", testid: "ws-create-dialog", "aria-labelledby": "create-title" },
    h("form", { method: "dialog", onsubmit: async (e) => {
      e.preventDefault();
      err.hidden = true;
      submit.disabled = true;
      try {
        await json(`/clusters/${ws.path}${WS_API}`, { method: "POST",
          body: { apiVersion: "tenancy.wharf.dev/v1alpha1", kind: "Workspace", metadata: { name: name.value.trim() } } });
        el.close();
        if (enter.checked) waitAndEnter(ctx, `${ws.path}:${name.value.trim()}`);
      } catch (x) {
        err.textContent = x instanceof HubError ? x.message : `Could not create: ${x.message}`;
        err.hidden = false;
      } finally {
        submit.disabled = false;
      }
    } },
    h("h2", { id: "create-title" }, "New workspace"),
    h("p", { class: "muted" }, `A child of ${ws.path}. You become its admin.`),
    h("label", { for: "ws-name" }, "Name"), name,
    h("label", { class: "check", for: "ws-enter" }, enter, "Open it when it is ready"),
    err,
    h("div", { class: "dialog-actions" },
      h("button", { class: "btn ghost", type: "button", onclick: () => el.close() }, "Cancel"), submit)));
  return { el, open: () => { err.hidden = true; name.value = ""; el.showModal(); name.focus(); } };
}

// waitAndEnter switches to a new workspace once whoami lists it (it is
// Ready and the caller's admin binding exists).
async function waitAndEnter(ctx, path) {
  for (let i = 0; i < 60; i++) {
    await ctx.refreshWhoami().catch(() => {});
    if (ctx.whoami.workspaces.some((w) => w.path === path)) {
      ctx.setWorkspace(path);
      return;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function buildDeleteDialog(ctx, ws) {
  let target = "";
  const title = h("h2", { id: "delete-title" });
  const err = h("p", { class: "form-error", role: "alert", hidden: true, testid: "ws-delete-error" });
  const confirm = h("button", { class: "btn danger", type: "submit", testid: "ws-delete-confirm" }, "Delete");
  const el = h("dialog", { class: "dialog", testid: "ws-delete-dialog", "aria-labelledby": "delete-title" },
    h("form", { method: "dialog", onsubmit: async (e) => {
      e.preventDefault();
      err.hidden = true;
      confirm.disabled = true;
      try {
        await json(`/clusters/${ws.path}${WS_API}/${encodeURIComponent(target)}`, { method: "DELETE" });
        el.close();
        ctx.refreshWhoami().then(() => ctx.renderNav(), () => {});
      } catch (x) {
        err.textContent = x.message;
        err.hidden = false;
      } finally {
        confirm.disabled = false;
      }
    } },
    title,
    h("p", {}, "Its child workspaces and everything stored in it are deleted too. This cannot be undone."),
    err,
    h("div", { class: "dialog-actions" },
      h("button", { class: "btn ghost", type: "button", onclick: () => el.close() }, "Cancel"), confirm)));
  return { el, open: (name) => { target = name; title.textContent = `Delete workspace ${name}?`; err.hidden = true; el.showModal(); } };
}
