// Loads fine and never calls customElements.define: the portal shell must
// give up on <wharf-provider-portalnodefine> after its limit and say so.
document.documentElement.dataset.portalnodefineLoaded = "true";
