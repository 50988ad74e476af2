// <wharf-provider-edges>: the edges of the current workspace, live
// (a watch through api.watch), with phase, connection and agent version;
// for each edge the one-line join command (a fresh single-use token,
// minted on request) with a copy button, and the SSH or kubeconfig
// commands. Contract: sdk/ui.go. Everything is built with textContent.
import { defineProvider, ProviderElement, sheet } from "/ui/shell/provider.js";

const GROUP = "edges.wharf.dev";
const STATE_DIR = "/var/lib/wharf-agent";

const css = sheet(`
  :host { display: block; }
  .card { border: 1px solid var(--line, #e4e7ec); border-radius: 10px; background: var(--panel, #fff); margin-bottom: 20px; }
  .head { display: flex; justify-content: space-between; align-items: center; padding: 16px 20px; gap: 12px; flex-wrap: wrap; }
  h2 { margin: 0; font-size: 1.05rem; }
  table { width: 100%; border-collapse: collapse; }
  th { text-align: left; font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted, #667085); padding: 8px 20px; border-bottom: 1px solid var(--line, #e4e7ec); }
  td { padding: 12px 20px; border-bottom: 1px solid var(--line, #e4e7ec); vertical-align: top; }
  tr:last-child td { border-bottom: 0; }
  td strong { white-space: nowrap; }
  .pill { display: inline-block; padding: 2px 10px; border-radius: 999px; font-size: 12.5px; font-weight: 600; }
  .Ready, .yes { color: var(--ok, #067647); background: var(--ok-bg, #dcfae6); }
  .Disconnected, .no { color: var(--bad, #b42318); background: var(--bad-bg, #fee4e2); }
  .Pending { color: var(--wait, #b54708); background: var(--wait-bg, #fef0c7); }
  .muted { color: var(--muted, #667085); }
  pre { background: var(--code, #f2f4f7); padding: 10px 12px; border-radius: 8px; overflow: auto; max-height: 7.5em; margin: 6px 0 0; font-size: 12.5px; white-space: pre-wrap; word-break: break-all; }
  button { font: inherit; font-size: 13.5px; font-weight: 600; padding: 6px 12px; border-radius: 8px; border: 1px solid var(--line, #e4e7ec); background: var(--panel, #fff); color: var(--text, #1b2230); cursor: pointer; }
  button.primary { background: var(--accent, #2f6feb); border-color: var(--accent, #2f6feb); color: var(--accent-fg, #fff); }
  button:focus-visible, input:focus-visible, select:focus-visible { outline: 2px solid var(--accent, #2f6feb); outline-offset: 1px; }
  input, select { font: inherit; padding: 6px 10px; border-radius: 8px; border: 1px solid var(--line, #e4e7ec); background: var(--panel, #fff); color: var(--text, #1b2230); }
  form { display: flex; gap: 8px; flex-wrap: wrap; align-items: center; }
  .err { color: var(--bad, #b42318); padding: 0 20px 12px; }
  .cmds { display: grid; gap: 10px; }
  .cmd-label { font-size: 12.5px; color: var(--muted, #667085); display: flex; justify-content: space-between; align-items: center; gap: 8px; }
  .live { font-size: 13px; color: var(--muted, #667085); }
`);

function el(tag, props = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "testid") e.dataset.testid = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of kids.flat()) if (c !== null && c !== undefined && c !== false) e.append(c instanceof Node ? c : String(c));
  return e;
}

function condition(e, type) {
  return ((e.status && e.status.conditions) || []).find((c) => c.type === type);
}

// b64url encodes a string as unpadded base64url of its UTF-8 bytes.
function b64url(s) {
  const bytes = new TextEncoder().encode(s);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

// command is a <pre> with a copy button.
function command(label, text, testid) {
  const pre = el("pre", { testid }, text);
  const copy = el("button", { type: "button", testid: `${testid}-copy`, onclick: async () => {
    try {
      await navigator.clipboard.writeText(text);
      copy.textContent = "Copied";
    } catch {
      // No clipboard permission (plain http, headless): select the text
      // so that Ctrl+C works.
      const r = document.createRange();
      r.selectNodeContents(pre);
      const sel = pre.getRootNode().getSelection ? pre.getRootNode().getSelection() : window.getSelection();
      sel.removeAllRanges();
      sel.addRange(r);
      copy.textContent = "Press Ctrl+C";
    }
    setTimeout(() => { copy.textContent = "Copy"; }, 2000);
  } }, "Copy");
  return el("div", {}, el("div", { class: "cmd-label" }, el("span", {}, label), copy), pre);
}

class EdgesProvider extends ProviderElement {
  constructor() {
    super();
    this.attachShadow({ mode: "open" }).adoptedStyleSheets = [css];
    this.edges = [];
    this.joins = new Map(); // edge name -> join command text
  }

  render(ctx, api, signal) {
    if (this.renderedFor === signal) return this.draw();
    this.renderedFor = signal;
    this.ctx = ctx;
    this.api = api;
    this.list = `/clusters/${ctx.workspace}/apis/${GROUP}/v1alpha1/edges`;
    this.live = el("span", { class: "live", testid: "edges-live" }, "connecting…");
    this.error = el("div", { class: "err", role: "alert", testid: "edges-error", hidden: true });
    this.body = el("tbody");
    const name = el("input", { name: "name", required: true, placeholder: "edge name", pattern: "[a-z0-9]([\\-a-z0-9]*[a-z0-9])?", "aria-label": "Edge name", testid: "edge-create-name" });
    const type = el("select", { name: "type", "aria-label": "Edge type", testid: "edge-create-type" },
      el("option", { value: "kubernetes" }, "Kubernetes cluster"), el("option", { value: "server" }, "Server (SSH)"));
    const form = el("form", { onsubmit: (e) => { e.preventDefault(); this.create(name.value.trim(), type.value).then(() => { name.value = ""; }, () => {}); } },
      name, type, el("button", { class: "primary", type: "submit", testid: "edge-create-submit" }, "New edge"));
    this.shadowRoot.replaceChildren(
      el("section", { class: "card" },
        el("div", { class: "head" }, el("h2", {}, `Edges in ${ctx.workspace}`), this.live, form),
        this.error,
        el("table", { testid: "edges-table" },
          el("thead", {}, el("tr", {}, ["Edge", "Phase", "Connected", "Agent", "Commands"].map((h) => el("th", {}, h)))),
          this.body)));
    this.draw();
    api.watch(this.list, {
      signal,
      onSync: (items) => { this.edges = items.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)); this.draw(); },
      onState: (open, err) => {
        this.live.textContent = open ? "● live" : "reconnecting…";
        if (err) this.showError(err.message);
        else if (open) this.showError("");
      },
    });
  }

  showError(msg) {
    this.error.textContent = msg;
    this.error.hidden = !msg;
  }

  async create(name, type) {
    this.showError("");
    try {
      const r = await this.api.fetch(this.list, {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ apiVersion: `${GROUP}/v1alpha1`, kind: "Edge", metadata: { name }, spec: { type } }),
      });
      if (!r.ok) {
        const s = await r.json().catch(() => ({}));
        throw new Error(s.message || `${r.status}`);
      }
    } catch (e) {
      // RBAC and validation messages as the hub wrote them.
      this.showError(`Could not create ${name}: ${e.message}`);
      throw e;
    }
    await this.join(name, type);
  }

  // join mints a single-use token and builds the self-contained agent
  // line, as "wharf edge join-command" does: hub URL, the hub's CA (from
  // /.well-known/wharf), the edge's cluster, name, type and the token.
  async join(name, type) {
    this.showError("");
    const edge = this.edges.find((e) => e.metadata.name === name);
    const cluster = (edge && edge.metadata.annotations && edge.metadata.annotations["wharf.dev/cluster"]) || this.ctx.cluster;
    try {
      const wk = await (await this.api.fetch("/.well-known/wharf")).json();
      const r = await this.api.fetch(`/services/providers/edges/edgeproxy/clusters/${cluster}/apis/${GROUP}/v1alpha1/edges/${encodeURIComponent(name)}/join-token`, {
        method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json" }, body: "{}",
      });
      const tok = await r.json();
      if (!r.ok) throw new Error(tok.message || `${r.status}`);
      const bundle = "wharf-join-v1." + b64url(JSON.stringify({ hub: wk.hubURL, ca: wk.ca || "", cluster, edge: name, type: type || (edge && edge.spec.type), token: tok.token }));
      this.joins.set(name, { text: `wharf-agent run --join ${bundle} --state-dir ${STATE_DIR}`, expires: tok.expiresAt });
      this.draw();
    } catch (e) {
      this.showError(`Could not mint a join token for ${name}: ${e.message}`);
    }
  }

  draw() {
    if (!this.body) return;
    const ws = this.ctx.workspace;
    if (!this.edges.length) {
      this.body.replaceChildren(el("tr", {}, el("td", { colspan: 5, class: "muted" }, "No edges yet. Create one, then run its join command on the edge machine.")));
      return;
    }
    this.body.replaceChildren(...this.edges.map((e) => {
      const name = e.metadata.name;
      const st = e.status || {};
      const phase = st.phase || "Pending";
      const conn = condition(e, "Connected");
      const connected = !!conn && conn.status === "True";
      const cmds = [];
      const j = this.joins.get(name);
      if (j) cmds.push(command(`Join (run on the edge; single use, expires ${j.expires})`, j.text, "edge-join-command"));
      if (e.spec.type === "server") cmds.push(command("SSH", `wharf ssh ${name} -w ${ws}`, "edge-ssh-command"));
      else cmds.push(command("kubectl", `kubectl --kubeconfig <(wharf kubeconfig edge ${name} -w ${ws}) get namespaces`, "edge-kubeconfig-command"));
      return el("tr", { testid: "edge-row", "data-edge": name },
        el("td", {}, el("strong", {}, name), el("div", { class: "muted" }, e.spec.type === "server" ? "server" : "kubernetes", st.hostname ? ` · ${st.hostname}` : "")),
        el("td", {}, el("span", { class: `pill ${phase}`, testid: "edge-phase" }, phase)),
        el("td", {}, el("span", { class: `pill ${connected ? "yes" : "no"}`, testid: "edge-connected", title: conn ? conn.message || conn.reason : "" }, connected ? "Connected" : "Not connected")),
        el("td", { testid: "edge-agent" }, st.agentVersion || "—"),
        el("td", {}, el("div", { class: "cmds" },
          el("div", {}, el("button", { type: "button", testid: "edge-join", onclick: () => this.join(name, e.spec.type) }, j ? "New join command" : "Join command")),
          cmds)));
    }));
  }
}

defineProvider("edges", EdgesProvider);
