package rules

import (
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ptr[T any](v T) *T { return &v }

var (
	nodesRes = Resource{Group: "", Version: "v1", Resource: "nodes", Verbs: []string{"get", "list", "watch", "update", "patch", "delete"}}
	scRes    = Resource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses", Verbs: []string{"get", "list"}}
	pvRes    = Resource{Group: "", Version: "v1", Resource: "persistentvolumes", Verbs: []string{"get", "list"}}
	icRes    = Resource{Group: "networking.k8s.io", Version: "v1", Resource: "ingressclasses", Verbs: []string{"get", "list"}}
	pcRes    = Resource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses", Verbs: []string{"get", "list"}}
	rcRes    = Resource{Group: "node.k8s.io", Version: "v1", Resource: "runtimeclasses", Verbs: []string{"get", "list"}}
	podsRes  = Resource{Group: "", Version: "v1", Resource: "pods", Namespaced: true, Verbs: []string{"get", "list"}}

	gateOn  = Config{ProxyClusterScoped: true, RequireCapsuleUser: true}
	gateOff = Config{ProxyClusterScoped: false, RequireCapsuleUser: true}

	alice = Identity{User: "alice", Groups: []string{"projectcapsule.dev"}, TenantUser: true}
	carol = Identity{User: "carol", Groups: []string{"ops"}, TenantUser: false}
)

func globalRule(subj Subject, crs ...ClusterResource) GlobalProxySettings {
	return GlobalProxySettings{Name: "g", Rules: []GlobalRule{{Subjects: []Subject{subj}, ClusterResources: crs}}}
}

func nodeCR(ops []string, kv ...string) ClusterResource {
	return ClusterResource{APIGroups: []string{""}, Resources: []string{"nodes"}, Operations: ops, Selector: ptr(ml(kv...))}
}

func obj(name string, kv ...string) Object {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return Object{Name: name, Labels: m}
}

// listed applies the grant's LIST filter to objs.
func listed(t *testing.T, g Grant, objs ...Object) ([]string, error) {
	t.Helper()
	f, ok, err := g.ListFilter()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("list not granted")
	}
	names := []string{}
	for _, o := range objs {
		if f(o) {
			names = append(names, o.Name)
		}
	}
	return names, nil
}

func TestGlobalProxySettings(t *testing.T) {
	n1, n2, n3 := obj("n1", "pool", "a", "zone", "x"), obj("n2", "pool", "b", "zone", "x"), obj("n3", "pool", "c")
	aliceUser := Subject{Kind: KindUser, Name: "alice"}
	tests := []struct {
		name      string
		cfg       Config
		id        Identity
		global    []GlobalProxySettings
		res       Resource
		wantVerbs []string
		wantList  []string // nil: list not granted
		listErr   bool
		getOK     map[string]bool
	}{
		{name: "basic", cfg: gateOn, id: alice, global: []GlobalProxySettings{globalRule(aliceUser, nodeCR(nil, "pool", "a"))}, res: nodesRes,
			wantVerbs: []string{"get", "list"}, wantList: []string{"n1"}, getOK: map[string]bool{"n1": true, "n2": false}},
		{name: "gate off grants nothing", cfg: gateOff, id: alice, global: []GlobalProxySettings{globalRule(aliceUser, nodeCR(nil, "pool", "a"))}, res: nodesRes,
			wantVerbs: nil, getOK: map[string]bool{"n1": false}},
		{name: "other subject", cfg: gateOn, id: alice, global: []GlobalProxySettings{globalRule(Subject{Kind: KindUser, Name: "bob"}, nodeCR(nil, "pool", "a"))}, res: nodesRes},
		{name: "group subject", cfg: gateOn, id: alice, global: []GlobalProxySettings{globalRule(Subject{Kind: KindGroup, Name: "projectcapsule.dev"}, nodeCR(nil, "pool", "a"))}, res: nodesRes,
			wantVerbs: []string{"get", "list"}, wantList: []string{"n1"}},
		{name: "union merges one In", cfg: gateOn, id: alice, global: []GlobalProxySettings{
			globalRule(aliceUser, nodeCR(nil, "pool", "a")), globalRule(aliceUser, nodeCR([]string{"List"}, "pool", "b"))}, res: nodesRes,
			wantVerbs: []string{"get", "list"}, wantList: []string{"n1", "n2"}, getOK: map[string]bool{"n1": true, "n2": true, "n3": false}},
		{name: "Get only", cfg: gateOn, id: alice, global: []GlobalProxySettings{globalRule(aliceUser, nodeCR([]string{"Get"}, "pool", "a"))}, res: nodesRes,
			wantVerbs: []string{"get"}, getOK: map[string]bool{"n1": true, "n2": false}},
		{name: "selects nothing is an empty list", cfg: gateOn, id: alice, global: []GlobalProxySettings{globalRule(aliceUser, nodeCR(nil, "pool", "none"))}, res: nodesRes,
			wantVerbs: []string{"get", "list"}, wantList: []string{}},
		{name: "different keys cannot combine", cfg: gateOn, id: alice, global: []GlobalProxySettings{
			globalRule(aliceUser, nodeCR(nil, "pool", "a")), globalRule(aliceUser, nodeCR(nil, "zone", "x"))}, res: nodesRes,
			wantVerbs: []string{"get", "list"}, listErr: true,
			// a named request still needs one complete selector
			getOK: map[string]bool{"n1": true, "n2": true, "n3": false}},
		{name: "partial selector match is no grant", cfg: gateOn, id: alice, global: []GlobalProxySettings{globalRule(aliceUser, nodeCR(nil, "pool", "b", "zone", "y"))}, res: nodesRes,
			wantVerbs: []string{"get", "list"}, wantList: []string{}, getOK: map[string]bool{"n2": false}},
		{name: "invalid operation grants nothing", cfg: gateOn, id: alice, global: []GlobalProxySettings{globalRule(aliceUser, nodeCR([]string{"Delete"}, "pool", "a"))}, res: nodesRes},
		{name: "an invalid entry voids its whole object", cfg: gateOn, id: alice, global: []GlobalProxySettings{{Name: "g", Rules: []GlobalRule{
			{Subjects: []Subject{aliceUser}, ClusterResources: []ClusterResource{nodeCR(nil, "pool", "a"), nodeCR([]string{"Watch"}, "pool", "b")}}}}}, res: nodesRes},
		{name: "empty apiGroups grants nothing", cfg: gateOn, id: alice, global: []GlobalProxySettings{globalRule(aliceUser, ClusterResource{Resources: []string{"nodes"}, Selector: ptr(ml("pool", "a"))})}, res: nodesRes},
		{name: "wildcards", cfg: gateOn, id: alice, global: []GlobalProxySettings{globalRule(aliceUser, ClusterResource{APIGroups: []string{"storage.k8s.io/*"}, Resources: []string{"*"}, Selector: &metav1.LabelSelector{}})}, res: scRes,
			wantVerbs: []string{"get", "list"}, wantList: []string{"n1", "n2", "n3"}},
		{name: "namespaced never", cfg: gateOn, id: alice, global: []GlobalProxySettings{globalRule(aliceUser, ClusterResource{APIGroups: []string{"*"}, Resources: []string{"*"}, Selector: &metav1.LabelSelector{}})}, res: podsRes},
		{name: "kind without get never", cfg: gateOn, id: alice, global: []GlobalProxySettings{globalRule(aliceUser, ClusterResource{APIGroups: []string{"*"}, Resources: []string{"*"}, Selector: &metav1.LabelSelector{}})},
			res: Resource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews", Verbs: []string{"create"}}},
		{name: "non tenant user needs require-capsule-user=false", cfg: gateOn, id: carol, global: []GlobalProxySettings{globalRule(Subject{Kind: KindUser, Name: "carol"}, nodeCR(nil, "pool", "a"))}, res: nodesRes},
		{name: "non tenant user allowed", cfg: Config{ProxyClusterScoped: true}, id: carol, global: []GlobalProxySettings{globalRule(Subject{Kind: KindUser, Name: "carol"}, nodeCR(nil, "pool", "a"))}, res: nodesRes,
			wantVerbs: []string{"get", "list"}, wantList: []string{"n1"}},
		{name: "non tenant user, gate off", cfg: Config{}, id: carol, global: []GlobalProxySettings{globalRule(Subject{Kind: KindUser, Name: "carol"}, nodeCR(nil, "pool", "a"))}, res: nodesRes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := &Snapshot{Global: tt.global}
			g := snap.Evaluate(tt.cfg, tt.id, tt.res)
			if got := g.Verbs(); !slices.Equal(got, tt.wantVerbs) {
				t.Errorf("verbs = %v, want %v", got, tt.wantVerbs)
			}
			for _, v := range []string{"watch", "create", "update", "patch", "delete", "deletecollection"} {
				if g.Allows(v) {
					t.Errorf("a global rule granted %s", v)
				}
				if g.Permits(v, n1) {
					t.Errorf("a global rule permitted %s on n1", v)
				}
			}
			names, err := listed(t, g, n1, n2, n3)
			switch {
			case tt.listErr:
				if !errors.Is(err, ErrCannotCombine) {
					t.Errorf("list err = %v, want ErrCannotCombine", err)
				}
			case tt.wantList == nil:
				if err == nil {
					t.Errorf("list granted (%v), want not granted", names)
				}
			default:
				if err != nil {
					t.Fatalf("list: %v", err)
				}
				if !slices.Equal(names, tt.wantList) {
					t.Errorf("list = %v, want %v", names, tt.wantList)
				}
			}
			for name, want := range tt.getOK {
				o := map[string]Object{"n1": n1, "n2": n2, "n3": n3}[name]
				if got := g.Permits("get", o); got != want {
					t.Errorf("get %s = %v, want %v", name, got, want)
				}
			}
		})
	}
}
