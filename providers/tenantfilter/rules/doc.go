// Package rules is the tenant filter's grants engine: a pure function from a
// snapshot of Capsule's settings (Tenants, GlobalProxySettings,
// ProxySettings, the tenant → namespaces map) and a caller to the access the
// provider itself grants on one cluster-scoped resource. It does no I/O: the
// core builds the Snapshot from its informer caches and applies the Grant.
//
// Three sources of grants (spec/tenant-filter.md):
//   - GlobalProxySettings (global.go, groups.go, combine.go): read access
//     (list, get) to labelled cluster-scoped objects for the rules' subjects,
//     only with the ProxyClusterScoped gate;
//   - tenant owners' class grants (classes.go): Tenant.spec.owners[].
//     proxySettings[] over the nodes, classes and volumes the tenant may use,
//     always on;
//   - ProxySetting (proxysetting.go): a tenant namespace's object handing the
//     tenant's class grants to other subjects, capped by what the tenant's
//     owners were granted.
//
// validate.go is the one validation of settings objects
// (ValidateClusterResourceIn for clusterResources entries, with discovery;
// ValidateProxySetting for a ProxySetting): the status controller reports
// its verdict as the object's Ready condition, and the engine, given the
// core's discovery in Snapshot.Discovered, ignores every object it
// refuses, so a Ready=False object grants nothing, not even its valid
// entries. capsule.go converts Capsule's objects to the engine's types for
// both.
//
// # Threat model
//
// The attacker is a tenant owner or a namespace admin who controls
// ProxySettings in their namespaces, the labels of namespaced objects, and
// every header they send; cluster administrators write Tenants and
// GlobalProxySettings. Therefore:
//   - a ProxySetting grants only kinds and operations some owner of its
//     namespace's tenant holds, over that tenant's selection, and is ignored
//     outside a tenant namespace, so writing one never widens access beyond
//     the tenant's own;
//   - a global rule never grants a watch or a mutation, and a rule's
//     selector is applied whole: a named object must match one complete
//     selector, and LIST selectors are only merged when that cannot widen
//     access across label combinations (otherwise the caller gets
//     BadRequest rather than a guessed union);
//   - every unknown value (an operation other than List/Get in a global
//     rule, an unknown kind, a malformed selector or regexp, an empty
//     apiGroups or resources list) grants nothing: failures close;
//   - a namespaced kind is never granted: Evaluate refuses a namespaced
//     resource, and an object naming one (judged against discovery, not
//     the request's description) grants nothing at all.
package rules
