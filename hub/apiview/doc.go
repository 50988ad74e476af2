// Package apiview gives each workspace the API documents of what it
// serves: discovery (legacy and aggregated) and OpenAPI v2 and v3.
//
// The hub's upstream machinery builds one set of documents for the whole
// process: every CRD group, a provider's included, shows up in every
// workspace, and the OpenAPI documents hold the built-in groups only.
// Upstream, kube-aggregator merges the CRD server's documents into the
// hub's; here a View decides per request which API groups the workspace
// sees (a provider's groups only where a ProviderBinding enables the
// provider; every other CRD group everywhere, as CRDs are hub-wide), the
// discovery filter removes the others from the answers upstream built,
// and OpenAPI builds per-view documents from the static specs of the hub
// and the CRD server plus the CRDs of the view, with the upstream CRD
// builder (k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder).
//
// Threat model: a workspace admin must learn nothing of another
// workspace from these documents, nor make a group appear or vanish
// elsewhere. The view of a request depends only on the logical cluster
// the hub resolved for it (never on client input beyond the URL the
// resolution already checked) and on hub-wide state (CRDs, which only hub
// administrators write, and the enablement index, whose bindings count in
// the workspace the storage recorded). Cached documents are keyed by the
// exact set of CRDs they contain, so two workspaces share a document only
// when it is byte for byte what each of them would get; the URLs inside
// the OpenAPI v3 index carry the /clusters/<workspace> prefix the caller
// used, so clients cache each workspace's documents under its own URL.
// OpenAPI v2 is gzipped once per view, form and version (gzip.go), not
// per request: per-request compression of megabytes let one tenant's
// share of GETs take every core (issue 24, second review, B-C).
// Until the provider catalog has loaded, only the hub's own groups are
// visible (fail closed, as the enablement filter answers 503 then).
// Authorization (who may read discovery and OpenAPI of a workspace at
// all, and the look-alike denials of hidden workspaces) runs before these
// filters and is not changed by them.
package apiview
