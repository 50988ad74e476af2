// <hello-whoami> shows who the hub says you are, via the provider's backend.
// The portal shell supplies the bearer token and active workspace.
class HelloWhoami extends HTMLElement {
  async connectedCallback() {
    this.textContent = "Asking the hub who you are…";
    try {
      const r = await fetch("/services/providers/hello/whoami", { credentials: "same-origin" });
      if (!r.ok) throw new Error(`${r.status} ${r.statusText}`);
      const id = await r.json();
      this.textContent = `Hello, ${id.User} (workspace ${id.Tenant || "?"})`;
    } catch (e) {
      this.textContent = `Could not ask the hub: ${e.message}`;
    }
  }
}
customElements.define("hello-whoami", HelloWhoami);
