package core

import (
	"context"
	"sort"
	"time"

	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/tenantfilter/rules"
)

// namespacesResource describes core namespaces to the grants engine when
// discovery has not (yet) described them; namespaces always have get.
var namespacesResource = rules.Resource{Version: "v1", Resource: "namespaces", Verbs: []string{"get", "list", "watch"}}

// globalNamespacesGrant is the caller's GlobalProxySettings grant on core
// namespaces, computed by the grants engine (package rules) so that there
// is one implementation of subject matching (a ServiceAccount subject only
// matches a system:serviceaccount: username), apiGroups patterns,
// operations, the ProxyClusterScoped gate, --require-capsule-user, and the
// voiding of an object with an invalid entry. A snapshot that cannot be
// built grants nothing (fail closed).
func (c *Core) globalNamespacesGrant(ctx context.Context, caller Caller) rules.Grant {
	if !c.opts.Gate(GateProxyClusterScoped) {
		return rules.Grant{}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	snap, err := c.grantsSnapshot(ctx)
	if err != nil {
		klog.V(1).InfoS("tenant filter: GlobalProxySettings unavailable for namespaces", "err", err)
		return rules.Grant{}
	}
	res := namespacesResource
	if ri, ok := c.cache.Resource("", "v1", "namespaces"); ok {
		res = resourceRules(ri)
	}
	return snap.Evaluate(c.grantsConfig(), c.grantsIdentity(caller), res)
}

// globalNamespaces are the cached namespaces the grant lets the caller
// list: each namespace's labels (which include kubernetes.io/metadata.name,
// so a rule can name namespaces) must match ONE complete selector of an
// entry granting list. Matching per namespace is exact, so the selectors of
// several entries need not be combined into one: the list is injected as
// names, never as the rules' selectors.
func (c *Core) globalNamespaces(g rules.Grant) []string {
	if !g.Allows("list") {
		return nil
	}
	inf, ok := c.kc.started(namespacesGVR)
	if !ok {
		return nil
	}
	var out []string
	for _, o := range inf.GetStore().List() {
		m, err := metaAccessor(o)
		if err != nil {
			continue
		}
		if g.Permits("list", rules.Object{Name: m.GetName(), Labels: m.GetLabels()}) {
			out = append(out, m.GetName())
		}
	}
	sort.Strings(out)
	return out
}
