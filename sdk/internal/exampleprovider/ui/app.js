customElements.define("example-provider", class extends HTMLElement {});
