// Package charts checks the Helm charts under charts/ and the Dockerfile:
// helm lint, helm template with the default values and with every value
// set under charts/<chart>/ci/, and kubeconform -strict on every rendered
// object, offline.
//
// kubeconform would fetch its JSON schemas from the network; here they are
// generated at test time (this file's Convert) from OpenAPI v2 served by
// real components: the kube-apiserver fixture (test/kube) for the built-in
// kinds, with the providers' own CRDs (from their Manifests) and a
// ServiceMonitor CRD (testdata) installed so it publishes theirs too, and
// the hub's OpenAPI definitions (hub/openapi) for the kinds the hub
// serves itself (Workspace, CatalogEntry, ProviderBinding).
//
// helm and kubeconform come from test/charttools (make chart-tools); a
// test fails, never skips, when they cannot be built.
package charts
