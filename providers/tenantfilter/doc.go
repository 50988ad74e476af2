// Package tenantfilter is the tenant-filter provider in plugin mode: the
// hub loads it (replicas: any) and routes
// /services/providers/tenant-filter/clusters/<downstream>/<kubernetes path>
// to it. Each downstream is a shared Kubernetes cluster named in the
// operator's provider config (--provider-config tenant-filter=<file>):
//
//	clusters:
//	- name: prod                       # the <downstream> in the URL
//	  kubeconfig: /etc/wharf/prod.kubeconfig   # the provider's credential there
//	# capsule-proxy's options, named like the standalone flags in camelCase:
//	capsuleConfigurationName: default  # --capsule-configuration-name
//	requireCapsuleUser: true           # --require-capsule-user
//	ignoredUserGroup: []               # --ignored-user-group
//	ignoredUsername: []                # --ignored-username
//	impersonationGroupRegexp: ""       # --impersonation-group-regexp
//	ignoredImpersonationGroup: []      # --ignored-impersonation-group
//	enableReflector: false             # --enable-reflector
//	disableCaching: false              # --disable-caching
//	featureGates: {ProxyClusterScoped: false, ProxyAllNamespaced: false}
//	allowedPaths: [/api, /apis, /version]  # --allowed-paths
//	clientConnectionQps: 20            # --client-connection-qps
//	clientConnectionBurst: 30          # --client-connection-burst
//	rolebindingsResyncPeriod: 10h      # --rolebindings-resync-period
//
// With no config the provider starts with no downstreams and is healthy,
// so `make run` loads it. The filtering itself is package core's, shared
// with the standalone listener (package standalone).
//
// # Threat model
//
// The caller's identity is the hub's X-Kedge-User and X-Kedge-Groups,
// trusted only because the plugin socket is reachable by the hub alone
// (sdk's contract). Everything else the client sent that could change who
// the downstream thinks is calling is removed before the core sees the
// request: the Authorization header the hub forwards (it is a hub
// credential, and client-go would otherwise send it downstream instead of
// the provider's), every Impersonate-* header (client impersonation is a
// standalone feature; through the hub there is no SubjectAccessReview
// subject to check it against), the X-Kedge-* headers themselves, and
// headers named in Connection. An unknown downstream answers the same 404
// as any other unknown path, so the names of configured downstreams are
// not probeable beyond "this one does not exist". SkipImpersonationReview
// has no effect in this mode.
package tenantfilter
