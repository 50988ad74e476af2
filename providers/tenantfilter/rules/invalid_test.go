package rules

import (
	"slices"
	"testing"
)

// TestInvalidGlobalGrantsNothing: a GlobalProxySettings the status
// controller marks Ready=False for what only discovery sees (an entry
// naming a namespaced kind, or a kind without get) grants nothing, not
// even its valid entries: the engine judges it with the same
// ValidateClusterResourceIn, from the Snapshot's discovery.
func TestInvalidGlobalGrantsNothing(t *testing.T) {
	secretsRes := Resource{Version: "v1", Resource: "secrets", Namespaced: true, Verbs: []string{"get", "list", "watch"}}
	widgetsRes := Resource{Group: "example.com", Version: "v1", Resource: "widgets", Verbs: []string{"list", "watch"}}
	discovered := []Resource{nodesRes, scRes, secretsRes, widgetsRes, podsRes}
	aliceUser := Subject{Kind: KindUser, Name: "alice"}
	cr := func(group, resource string) ClusterResource {
		return ClusterResource{APIGroups: []string{group}, Resources: []string{resource}, Selector: ptr(ml())}
	}
	n1 := obj("n1", "pool", "a")
	tests := []struct {
		name       string
		global     GlobalProxySettings
		discovered []Resource
		res        Resource
		wantVerbs  []string
	}{
		{name: "valid object grants nodes", global: globalRule(aliceUser, nodeCR(nil, "pool", "a"), cr("", "storageclasses")),
			discovered: discovered, res: nodesRes, wantVerbs: []string{"get", "list"}},
		{name: "secrets entry voids the nodes entry", global: globalRule(aliceUser, cr("", "secrets"), nodeCR(nil, "pool", "a")),
			discovered: discovered, res: nodesRes},
		{name: "secrets entry itself grants no secrets", global: globalRule(aliceUser, cr("", "secrets"), nodeCR(nil, "pool", "a")),
			discovered: discovered, res: secretsRes},
		{name: "secrets named as cluster-scoped still no secrets", global: globalRule(aliceUser, cr("", "secrets")),
			discovered: discovered, res: Resource{Version: "v1", Resource: "secrets", Verbs: []string{"get", "list"}}},
		{name: "kind without get voids the object", global: globalRule(aliceUser, cr("example.com", "widgets"), nodeCR(nil, "pool", "a")),
			discovered: discovered, res: nodesRes},
		{name: "invalid entry in another rule voids the object",
			global: GlobalProxySettings{Name: "g", Rules: []GlobalRule{
				{Subjects: []Subject{aliceUser}, ClusterResources: []ClusterResource{nodeCR(nil, "pool", "a")}},
				{Subjects: []Subject{{Kind: KindUser, Name: "bob"}}, ClusterResources: []ClusterResource{cr("", "pods")}},
			}},
			discovered: discovered, res: nodesRes},
		{name: "namespaced kind not discovered yet is no error", global: globalRule(aliceUser, cr("later.example.com", "gadgets"), nodeCR(nil, "pool", "a")),
			discovered: discovered, res: nodesRes, wantVerbs: []string{"get", "list"}},
		{name: "wildcard resources skip namespaced kinds", global: globalRule(aliceUser, ClusterResource{APIGroups: []string{"*"}, Resources: []string{"*"}, Selector: ptr(ml("pool", "a"))}),
			discovered: discovered, res: nodesRes, wantVerbs: []string{"get", "list"}},
		{name: "wildcard resources never select secrets", global: globalRule(aliceUser, ClusterResource{APIGroups: []string{"*"}, Resources: []string{"*"}, Selector: ptr(ml())}),
			discovered: discovered, res: secretsRes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Snapshot{Global: []GlobalProxySettings{tt.global}, Discovered: tt.discovered}
			g := s.Evaluate(gateOn, alice, tt.res)
			if got := g.Verbs(); !slices.Equal(got, tt.wantVerbs) {
				t.Fatalf("verbs = %v, want %v", got, tt.wantVerbs)
			}
			if tt.wantVerbs == nil {
				if !g.Empty() {
					t.Fatalf("grant is not empty")
				}
				if g.Permits("get", n1) || g.Permits("list", n1) {
					t.Fatalf("grant permits an object")
				}
				if _, ok, _ := g.ListFilter(); ok {
					t.Fatalf("grant has a list filter")
				}
			}
			// The engine and the status controller agree.
			if ready := len(ValidateGlobal(tt.global, tt.discovered)) == 0; ready != globalValid(tt.global, tt.discovered) {
				t.Fatalf("ValidateGlobal ready=%v but engine globalValid disagrees", ready)
			}
		})
	}
}

// TestInvalidProxySettingGrantsNothing: a ProxySetting the status
// controller reports Ready=False (ValidateProxySetting refuses one of its
// entries) hands out none of its entries.
func TestInvalidProxySettingGrantsNothing(t *testing.T) {
	base := classSnapshot()
	base.Discovered = []Resource{nodesRes, scRes, podsRes, {Version: "v1", Resource: "secrets", Namespaced: true, Verbs: []string{"get", "list"}}}
	dave := Identity{User: "dave", Groups: []string{"projectcapsule.dev"}, TenantUser: true}
	secrets := ClusterResource{APIGroups: []string{""}, Resources: []string{"secrets"}, Selector: ptr(ml())}
	nodesOwner := func(crs ...ClusterResource) Owner {
		o := owner(KindUser, "dave", kg(Nodes, OpList))
		o.ClusterResources = crs
		return o
	}
	tests := []struct {
		name   string
		owners []Owner
		reason string // "" valid
		verbs  []string
	}{
		{name: "valid", owners: []Owner{nodesOwner()}, verbs: []string{"get", "list"}},
		{name: "secrets clusterResources entry voids it", owners: []Owner{nodesOwner(secrets)}, reason: ReasonNamespacedResource},
		{name: "unknown kind voids it", owners: []Owner{owner(KindUser, "dave", kg(Nodes, OpList), kg("Secrets", OpList))}, reason: ReasonInvalidProxySettings},
		{name: "unknown operation voids it", owners: []Owner{owner(KindUser, "dave", kg(Nodes, OpList, OpGet))}, reason: ReasonInvalidOperation},
		{name: "another subject's invalid entry voids it", owners: []Owner{nodesOwner(), owner(KindUser, "erin", kg("Secrets", OpList))}, reason: ReasonInvalidProxySettings},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := ProxySetting{Namespace: "wind-dev", Name: "p", Subjects: tt.owners}
			if got := ReasonOf(ValidateProxySetting(ps, base.Discovered)); got != tt.reason {
				t.Fatalf("reason = %q, want %q", got, tt.reason)
			}
			snap := *base
			snap.ProxySettings = []ProxySetting{ps}
			if got := snap.Evaluate(gateOff, dave, nodesRes).Verbs(); !slices.Equal(got, tt.verbs) {
				t.Fatalf("verbs = %v, want %v", got, tt.verbs)
			}
		})
	}
}
