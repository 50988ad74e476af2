// The helper provider UIs may import from the shell:
//
//   import { defineProvider, navigate, sheet } from "/ui/shell/provider.js";
//
// See sdk/ui.go for the whole contract. Nothing here holds or reaches a
// credential: the element gets context and api from the shell.

// defineProvider registers cls as <wharf-provider-<name>>, once.
export function defineProvider(name, cls) {
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name)) throw new Error(`defineProvider: bad provider name ${JSON.stringify(name)}`);
  const tag = `wharf-provider-${name}`;
  if (!customElements.get(tag)) customElements.define(tag, cls);
  return tag;
}

// navigate asks the shell to move to sub-route path ("/edges/e1") of
// this provider; the shell updates the URL and the element's context.
export function navigate(el, path) {
  el.dispatchEvent(new CustomEvent("wharf-navigate", { bubbles: true, composed: true, detail: { path } }));
}

// sheet makes a constructable stylesheet for a shadow root
// (shadowRoot.adoptedStyleSheets = [sheet(css)]): the portal's CSP
// forbids inline <style>, not stylesheets built from script.
export function sheet(css) {
  const s = new CSSStyleSheet();
  s.replaceSync(css);
  return s;
}

// ProviderElement is an optional base class: it calls render() whenever
// context or api is set, once both are there and the element is
// connected, and gives an AbortSignal that ends when the element is
// removed or its workspace changes (for watches).
export class ProviderElement extends HTMLElement {
  #context = null;
  #api = null;
  #abort = null;
  set context(v) {
    const wsChanged = !this.#context || this.#context.workspace !== v.workspace;
    this.#context = v;
    if (wsChanged) this.#reset();
    this.#update();
  }
  get context() { return this.#context; }
  set api(v) { this.#api = v; this.#update(); }
  get api() { return this.#api; }
  get signal() { return this.#abort ? this.#abort.signal : AbortSignal.abort(); }
  connectedCallback() { this.#reset(); this.#update(); }
  disconnectedCallback() { if (this.#abort) this.#abort.abort(); this.#abort = null; }
  #reset() { if (this.#abort) this.#abort.abort(); this.#abort = this.isConnected ? new AbortController() : null; }
  #update() { if (this.#context && this.#api && this.isConnected) this.render(this.#context, this.#api, this.signal); }
  // render(context, api, signal) is the subclass's.
  render() {}
}
