package rules

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func owner(kind, name string, grants ...KindGrant) Owner {
	return Owner{Subject: Subject{Kind: kind, Name: name}, ProxySettings: grants}
}

func kg(kind string, ops ...string) KindGrant { return KindGrant{Kind: kind, Operations: ops} }

func classSnapshot() *Snapshot {
	return &Snapshot{
		Tenants: []Tenant{
			{
				Name: "wind",
				Owners: []Owner{owner(KindUser, "alice",
					kg(Nodes, OpList, OpUpdate), kg(StorageClasses, OpList), kg(IngressClasses, OpList, OpDelete),
					kg(PriorityClasses, OpList), kg(RuntimeClasses, OpList), kg(PersistentVolumes, OpList))},
				NodeSelector:    map[string]string{"pool": "wind"},
				StorageClasses:  &AllowedList{Allowed: []string{"fast"}, Default: "standard", AllowedRegex: "^wind-.*"},
				IngressClasses:  &AllowedList{Allowed: []string{"nginx"}},
				PriorityClasses: &AllowedList{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "wind"}}},
				RuntimeClasses:  &AllowedList{Allowed: []string{"gvisor"}, Default: "runc"},
			},
			{
				Name:   "solar",
				Owners: []Owner{owner(KindGroup, "solar-owners", kg(Nodes, OpList, OpDelete), kg(StorageClasses, OpList))},
				// no nodeSelector: every node; no storageClasses: none
			},
		},
		Namespaces: map[string][]string{"wind": {"wind-dev", "wind-prod"}, "solar": {"solar-a"}},
	}
}

func TestOwnersClassGrants(t *testing.T) {
	snap := classSnapshot()
	bob := Identity{User: "bob", Groups: []string{"solar-owners"}, TenantUser: true}
	both := Identity{User: "alice", Groups: []string{"solar-owners"}, TenantUser: true}
	pv := func(name, ns string) Object { return Object{Name: name, ClaimNamespace: ns} }
	tests := []struct {
		name   string
		cfg    Config
		id     Identity
		res    Resource
		verbs  []string
		objs   []Object
		listed []string
		permit map[string][]string // verb → names permitted among objs
	}{
		{name: "nodes by selector with update", cfg: gateOff, id: alice, res: nodesRes, verbs: []string{"get", "list", "patch", "update"},
			objs: []Object{obj("w1", "pool", "wind"), obj("s1", "pool", "solar")}, listed: []string{"w1"},
			permit: map[string][]string{"get": {"w1"}, "patch": {"w1"}, "update": {"w1"}, "delete": {}}},
		{name: "no nodeSelector sees all nodes", cfg: gateOff, id: bob, res: nodesRes, verbs: []string{"delete", "get", "list"},
			objs: []Object{obj("w1", "pool", "wind"), obj("s1")}, listed: []string{"w1", "s1"},
			permit: map[string][]string{"delete": {"w1", "s1"}, "patch": {}}},
		{name: "union across tenants", cfg: gateOff, id: both, res: nodesRes, verbs: []string{"delete", "get", "list", "patch", "update"},
			objs: []Object{obj("w1", "pool", "wind"), obj("s1")}, listed: []string{"w1", "s1"},
			// update only where alice's wind grant reaches; delete wherever solar's does
			permit: map[string][]string{"patch": {"w1"}, "delete": {"w1", "s1"}}},
		{name: "storage classes by name, default, regexp", cfg: gateOff, id: alice, res: scRes, verbs: []string{"get", "list"},
			objs:   []Object{obj("fast"), obj("standard"), obj("wind-ssd"), obj("solar-ssd"), obj("slow", "kubernetes.io/metadata.name", "fast")},
			listed: []string{"fast", "standard", "wind-ssd"}},
		{name: "tenant without storage classes sees none", cfg: gateOff, id: bob, res: scRes, verbs: []string{"get", "list"},
			objs: []Object{obj("fast")}, listed: []string{}},
		{name: "ingress classes with delete", cfg: gateOff, id: alice, res: icRes, verbs: []string{"delete", "get", "list"},
			objs: []Object{obj("nginx"), obj("traefik")}, listed: []string{"nginx"}, permit: map[string][]string{"delete": {"nginx"}}},
		{name: "priority classes by labels", cfg: gateOff, id: alice, res: pcRes, verbs: []string{"get", "list"},
			objs: []Object{obj("p1", "tier", "wind"), obj("p2", "tier", "solar")}, listed: []string{"p1"}},
		{name: "runtime classes by name and default", cfg: gateOff, id: alice, res: rcRes, verbs: []string{"get", "list"},
			objs: []Object{obj("gvisor"), obj("kata"), obj("runc")}, listed: []string{"gvisor", "runc"}},
		{name: "pvs bound into the tenant", cfg: gateOff, id: alice, res: pvRes, verbs: []string{"get", "list"},
			objs: []Object{pv("pv1", "wind-dev"), pv("pv2", "solar-a"), pv("pv3", "")}, listed: []string{"pv1"}},
		{name: "gate on keeps class grants", cfg: gateOn, id: alice, res: nodesRes, verbs: []string{"get", "list", "patch", "update"},
			objs: []Object{obj("w1", "pool", "wind"), obj("s1", "pool", "solar")}, listed: []string{"w1"}},
		{name: "not a tenant user", cfg: gateOff, id: Identity{User: "alice"}, res: nodesRes},
		{name: "require-capsule-user=false", cfg: Config{}, id: Identity{User: "alice"}, res: nodesRes, verbs: []string{"get", "list", "patch", "update"},
			objs: []Object{obj("w1", "pool", "wind")}, listed: []string{"w1"}},
		{name: "user named like the group is not the group", cfg: gateOff, id: Identity{User: "solar-owners", TenantUser: true}, res: nodesRes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := snap.Evaluate(tt.cfg, tt.id, tt.res)
			if got := g.Verbs(); !slices.Equal(got, tt.verbs) {
				t.Errorf("verbs = %v, want %v", got, tt.verbs)
			}
			if tt.listed != nil {
				names, err := listed(t, g, tt.objs...)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(names, tt.listed) {
					t.Errorf("list = %v, want %v", names, tt.listed)
				}
			}
			for verb, want := range tt.permit {
				got := []string{}
				for _, o := range tt.objs {
					if g.Permits(verb, o) {
						got = append(got, o.Name)
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s permitted on %v, want %v", verb, got, want)
				}
			}
			if g.Allows("watch") || g.Allows("create") {
				t.Error("class grants never give watch or create")
			}
		})
	}
}

func TestProxySetting(t *testing.T) {
	dave := Identity{User: "dave", TenantUser: true}
	base := classSnapshot()
	tests := []struct {
		name  string
		ps    []ProxySetting
		id    Identity
		res   Resource
		verbs []string
	}{
		{name: "extends the tenant to another subject", id: dave, res: nodesRes, verbs: []string{"get", "list"},
			ps: []ProxySetting{{Namespace: "wind-dev", Name: "p", Subjects: []Owner{owner(KindUser, "dave", kg(Nodes, OpList))}}}},
		{name: "cannot hand out an operation no owner has", id: dave, res: nodesRes, verbs: []string{"get", "list"},
			ps: []ProxySetting{{Namespace: "wind-dev", Name: "p", Subjects: []Owner{owner(KindUser, "dave", kg(Nodes, OpList, OpDelete))}}}},
		{name: "cannot hand out a kind no owner has", id: dave, res: Resource{Group: "", Version: "v1", Resource: "persistentvolumes"},
			ps: []ProxySetting{{Namespace: "solar-a", Name: "p", Subjects: []Owner{owner(KindUser, "dave", kg(PersistentVolumes, OpList))}}}},
		{name: "ignored outside a tenant namespace", id: dave, res: nodesRes,
			ps: []ProxySetting{{Namespace: "default", Name: "p", Subjects: []Owner{owner(KindUser, "dave", kg(Nodes, OpList))}}}},
		{name: "a writer cannot self-grant beyond the tenant", id: alice, res: nodesRes, verbs: []string{"get", "list", "patch", "update"},
			// alice owns wind with List+Update on nodes; a ProxySetting
			// in wind asking Delete for herself adds nothing.
			ps: []ProxySetting{{Namespace: "wind-prod", Name: "p", Subjects: []Owner{owner(KindUser, "alice", kg(Nodes, OpDelete))}}}},
		{name: "group subject", id: Identity{User: "erin", Groups: []string{"wind-viewers"}, TenantUser: true}, res: scRes, verbs: []string{"get", "list"},
			ps: []ProxySetting{{Namespace: "wind-dev", Name: "p", Subjects: []Owner{owner(KindGroup, "wind-viewers", kg(StorageClasses, OpList))}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := *base
			snap.ProxySettings = tt.ps
			g := snap.Evaluate(gateOff, tt.id, tt.res)
			if got := g.Verbs(); !slices.Equal(got, tt.verbs) {
				t.Errorf("verbs = %v, want %v", got, tt.verbs)
			}
			// the selection is always the tenant's own
			if tt.res.Resource == "nodes" && g.Permits("get", obj("s1", "pool", "solar")) {
				t.Error("a ProxySetting in wind granted a node outside wind's selector")
			}
		})
	}
}
