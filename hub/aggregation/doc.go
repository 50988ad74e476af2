// Package aggregation is the hub's per-workspace API routing to providers,
// kube-aggregator's model with workspaces: every workspace stores
// apiregistration.k8s.io/v1 APIServices, and one whose spec.service names a
// provider (namespace wharf-providers, name <provider>) routes that
// workspace's /apis/<group>/<version>/… to the provider's backend, after the
// request was authenticated and authorized against the workspace's RBAC.
//
// The pieces: the APIService storage and its strategy (registry.go,
// validation.go); the admission plugin that decides who may make an
// APIService route where (admission.go); an informer over every
// workspace's APIServices indexed by (cluster, group, version) (index.go);
// the handler that proxies through hub/proxy (handler.go); the discovery
// cache and the Available controller (discovery.go, available.go).
//
// # Threat model
//
// The attacker is admin of some workspace: full RBAC there, nothing
// elsewhere.
//
//   - Routing is keyed on the logical cluster the storage recorded, never
//     on anything a client sends: an APIService in workspace A routes A's
//     requests only, and discovery entries are cached per (cluster, gv).
//   - Only the provider an APIService names may create it or point it at
//     itself, and only where it is enabled: a workspace admin cannot send
//     her workspace's traffic (with identities a provider trusts) to a
//     provider that did not ask for it, nor make a provider serve a group
//     it did not register. Every write path goes through admission (create,
//     create-on-update, server-side apply, update, patch, status, delete,
//     deletecollection, dry-run); the hub's own controller writes status
//     through storage, which no client reaches.
//   - Groups the hub serves itself, Kubernetes' groups, groups a catalog
//     entry owns and the shipped providers' groups (loaded or not) are
//     refused, so an APIService never shadows a built-in or another
//     provider's API.
//   - A request reaches a provider only after authorization in the client
//     workspace, with the caller's Authorization, cookies and
//     Impersonate-* removed and every inbound X-Kedge-* stripped; the hub
//     sets the identity and X-Kedge-Original-Path, which a client can never
//     set on the backend route, so a provider can tell aggregated requests
//     (which passed the client workspace's RBAC) from direct ones.
//   - Denials look alike: a workspace without the APIService answers as if
//     the group did not exist (404), and a provider that is not loaded is
//     503 with no detail.
//   - Status is the hub's: every replica computes the same conditions from
//     the same inputs and writes only on change, so replicas converge.
package aggregation
