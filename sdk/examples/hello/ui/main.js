// <wharf-provider-hello>: the sample provider's page in the portal. It
// asks its own backend (/services/providers/hello/whoami) who the hub
// says the user is, through the api.fetch the shell hands it: the shell
// adds the session cookie, the workspace and, for writes, the CSRF
// header. The element never sees a token. See sdk/ui.go.
import { defineProvider, ProviderElement, navigate, sheet } from "/ui/shell/provider.js";

const css = sheet(`
  :host { display: block; }
  .card { border: 1px solid var(--line, #e4e7ec); border-radius: 10px; padding: 20px 22px; background: var(--panel, #fff); }
  h2 { margin: 0 0 12px; font-size: 1.05rem; }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: 8px 20px; margin: 0; }
  dt { color: var(--muted, #667085); }
  dd { margin: 0; font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
  .err { color: var(--bad, #b42318); }
  nav { margin-top: 16px; display: flex; gap: 12px; }
  a { color: var(--accent, #2f6feb); cursor: pointer; }
`);

class HelloProvider extends ProviderElement {
  constructor() {
    super();
    this.attachShadow({ mode: "open" }).adoptedStyleSheets = [css];
  }

  async render(ctx, api, signal) {
    const root = this.shadowRoot;
    const card = document.createElement("section");
    card.className = "card";
    const title = document.createElement("h2");
    title.textContent = ctx.subRoute === "/about" ? "About this sample" : "Who the hub says you are";
    const body = document.createElement("div");
    body.dataset.testid = "hello-whoami";
    body.textContent = "Asking the backend…";
    const nav = document.createElement("nav");
    for (const [label, p] of [["Who am I", "/"], ["About", "/about"]]) {
      const a = document.createElement("a");
      a.textContent = label;
      a.tabIndex = 0;
      a.addEventListener("click", () => navigate(this, p));
      a.addEventListener("keydown", (e) => { if (e.key === "Enter") navigate(this, p); });
      nav.append(a);
    }
    card.append(title, body, nav);
    root.replaceChildren(card);
    if (ctx.subRoute === "/about") {
      body.textContent = "A custom element served by the hello provider, mounted by the portal with a context and an api.";
      return;
    }
    try {
      const r = await api.fetch("/services/providers/hello/whoami", { signal });
      if (!r.ok) throw new Error(`${r.status} ${r.statusText}`);
      const id = await r.json();
      const dl = document.createElement("dl");
      for (const [k, v] of [["User", id.User], ["Groups", (id.Groups || []).join(", ")], ["Workspace", id.Tenant], ["Cluster", id.Cluster]]) {
        const dt = document.createElement("dt");
        dt.textContent = k;
        const dd = document.createElement("dd");
        dd.textContent = v || "—";
        dd.dataset.field = k.toLowerCase();
        dl.append(dt, dd);
      }
      body.replaceChildren(dl);
    } catch (e) {
      if (signal.aborted) return;
      body.className = "err";
      body.textContent = `Could not ask the backend: ${e.message}`;
    }
  }
}

defineProvider("hello", HelloProvider);
