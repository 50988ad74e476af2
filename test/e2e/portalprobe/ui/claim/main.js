// portalclaim (portal:32 of test/e2e/portal/attack_test.go): a provider
// whose manifest claims a CRD in another provider's API group
// (edges.wharf.dev). Its element does nothing; the test drives its api.
class PortalClaim extends HTMLElement {
  connectedCallback() { this.dataset.mounted = "true"; }
}
customElements.define("wharf-provider-portalclaim", PortalClaim);
