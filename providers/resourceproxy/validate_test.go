package resourceproxy

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func rp(name string, age int, target Target, mode AccessMode, entries ...Entry) *ResourceProxy {
	return &ResourceProxy{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(int64(1000+age), 0))},
		Spec:       Spec{Target: target, AccessMode: mode, Resources: entries},
	}
}

func TestPlan(t *testing.T) {
	ws := Target{Workspace: "root:platform"}
	other := Target{Workspace: "root:other"}
	ext := Target{External: &External{SecretRef: SecretRef{Namespace: "ops", Name: "prod"}}}
	db := Entry{"databases.example.com", "v1", "databases"}
	backups := Entry{"databases.example.com", "v1", "backups"}
	wild := Entry{"databases.example.com", "v1", "*"}
	queues := Entry{"queues.example.com", "v1", "queues"}
	for _, tc := range []struct {
		name     string
		proxies  []*ResourceProxy
		routes   map[string][]string // gv → resources ("*" for wildcard)
		problems map[string]string   // proxy → reason
	}{
		{"one proxy", []*ResourceProxy{rp("a", 0, ws, "", db, backups)}, map[string][]string{"databases.example.com/v1": {"backups", "databases"}}, nil},
		{"two proxies agree", []*ResourceProxy{rp("a", 0, ws, "", db), rp("b", 1, ws, AccessOwned, backups)}, map[string][]string{"databases.example.com/v1": {"backups", "databases"}}, nil},
		{"other target conflicts, oldest wins", []*ResourceProxy{rp("b", 1, other, "", backups, queues), rp("a", 0, ws, "", db)},
			map[string][]string{"databases.example.com/v1": {"databases"}}, map[string]string{"b": ReasonConflict}},
		{"other mode conflicts", []*ResourceProxy{rp("a", 0, ws, "", db), rp("b", 1, ws, AccessAll, backups)},
			map[string][]string{"databases.example.com/v1": {"databases"}}, map[string]string{"b": ReasonConflict}},
		{"wildcard and explicit in one object", []*ResourceProxy{rp("a", 0, ws, "", db, wild)}, nil, map[string]string{"a": ReasonWildcardOverlap}},
		{"wildcard and explicit across objects", []*ResourceProxy{rp("a", 0, ws, "", wild), rp("b", 1, ws, "", db)},
			map[string][]string{"databases.example.com/v1": {"*"}}, map[string]string{"b": ReasonWildcardOverlap}},
		{"built-in group", []*ResourceProxy{rp("a", 0, ws, "", Entry{"apps.k8s.io", "v1", "x"})}, nil, map[string]string{"a": ReasonBuiltinGroup}},
		{"provider group", []*ResourceProxy{rp("a", 0, ws, "", Entry{"edges.wharf.dev", "v1alpha1", "edges"})}, nil, map[string]string{"a": ReasonBuiltinGroup}},
		{"core group", []*ResourceProxy{rp("a", 0, ws, "", Entry{"", "v1", "pods"})}, nil, map[string]string{"a": ReasonInvalid}},
		{"target is the client by id", []*ResourceProxy{rp("a", 0, Target{Workspace: "clientid"}, "", db)}, nil, map[string]string{"a": ReasonTargetIsClient}},
		{"target is the client by path", []*ResourceProxy{rp("a", 0, Target{Workspace: "root:client"}, "", db)}, nil, map[string]string{"a": ReasonTargetIsClient}},
		{"both targets", []*ResourceProxy{rp("a", 0, Target{Workspace: "root:x", External: ext.External}, "", db)}, nil, map[string]string{"a": ReasonInvalid}},
		{"external", []*ResourceProxy{rp("a", 0, ext, "", db)}, map[string][]string{"databases.example.com/v1": {"databases"}}, nil},
	} {
		routes, problems := plan(tc.proxies, "clientid", "root:client")
		if len(routes) != len(tc.routes) {
			t.Errorf("%s: routes %v, want %v", tc.name, routes, tc.routes)
		}
		for gv, want := range tc.routes {
			r := routes[gv]
			if r == nil {
				t.Errorf("%s: no route for %s", tc.name, gv)
				continue
			}
			got := r.Resources
			if r.Wildcard {
				got = []string{"*"}
			}
			if len(got) != len(want) || (len(got) > 0 && got[0] != want[0]) {
				t.Errorf("%s: %s resources %v, want %v", tc.name, gv, got, want)
			}
		}
		if len(problems) != len(tc.problems) {
			t.Errorf("%s: problems %v, want %v", tc.name, problems, tc.problems)
		}
		for name, reason := range tc.problems {
			if p := problems[name]; p == nil || p.reason != reason {
				t.Errorf("%s: problem of %s = %v, want %s", tc.name, name, p, reason)
			}
		}
	}
}
