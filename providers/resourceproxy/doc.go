// Package resourceproxy is the resource-proxy provider: a workspace's
// requests for chosen API groups and versions are forwarded to a target,
// another workspace on this hub or an external Kubernetes cluster, where the
// objects are stored (spec/resource-proxy.md).
//
// Pieces:
//   - types.go, crd.go: the ResourceProxy API (proxy.wharf.dev/v1alpha1,
//     cluster-scoped like vCluster's: one object per client workspace names
//     a target and its resource entries).
//   - controller.go, validate.go: keeps APIServices <version>.<group> in the
//     client workspace in step with the valid entries, writes status
//     conditions saying why an entry does not work, and publishes the
//     routing table (routes.go) the proxy reads.
//   - proxy.go, ownership.go, namespaces.go, discovery.go: the aggregated
//     request path.
//   - target.go, peers.go: the connection to a target and its peers' health.
//   - config.go, targetpolicy/: which addresses an external target may be
//     dialled at (the operator's targetPolicy).
//   - metrics.go: the spec's metrics, on the provider's own registry.
//
// # Threat model
//
// The attacker is admin of some workspace. They control ResourceProxy
// objects, Secrets and RBAC in their workspace, and every header of their
// requests; they do not control the hub or the plugin socket.
//
//   - Only the hub's aggregation route can set X-Kedge-Original-Path (the
//     backend proxy strips every inbound X-Kedge-*), and that route runs the
//     client workspace's authentication and RBAC first. The proxy therefore
//     serves a request only when that header is present, and answers 404
//     otherwise, so a direct /services/providers/resource-proxy/apis/...
//     call cannot skip the client's RBAC.
//   - The client workspace comes from X-Kedge-Cluster/-Tenant (hub-asserted).
//     The route is looked up by (cluster id, group/version) from
//     ResourceProxies stored in that cluster, so a workspace can only route
//     its own requests, never another workspace's.
//   - On the target the proxy acts as wharf:workspace:<client path>, by
//     impersonation on a credential that may impersonate only such users
//     (the hub's providerauth for workspace targets, the target's RBAC for
//     external ones). The caller's Authorization and every inbound
//     Impersonate-* header are dropped, so a caller can neither reach the
//     target with its own token nor pick another identity.
//   - The hub's delegation of the routed request (sdk.HeaderDelegation,
//     which lets the hub serve the proxy's calls for it on that request's
//     seats) goes to a workspace target only, which is the hub: never to
//     an external cluster, whose operator must not learn it.
//   - A request arriving already as wharf:workspace:* was sent by a proxy
//     (this one or another replica): it is refused, so two workspaces that
//     route the same group/version to each other cannot loop.
//   - Owned mode: list/watch get the owner selector, named requests on
//     objects without both owner labels of the client answer 404, and the
//     owner labels written are always the client's own (a client cannot
//     write another client's labels).
//   - An external target's server and peers are named by the workspace
//     admin (the kubeconfig, and the EndpointSlice of a cluster she may
//     run), and the provider dials them from the hub's host. Every address
//     goes through the target policy (targetpolicy): loopback, link-local
//     and metadata, unspecified, multicast and the hub host's own
//     addresses are refused unless the operator allows them, names are
//     judged on every dial (rebinding), and a refusal happens before any
//     packet, so open and closed ports answer alike (Ready=False
//     TargetAddressRefused, the route withdrawn; requests already under
//     way get the one 503).
//   - Target connections are cached per client cluster, so a kubeconfig
//     Secret of one workspace never serves another. Tokens and kubeconfig
//     contents are never logged or written to status; errors name the
//     target and the peer host only.
package resourceproxy
