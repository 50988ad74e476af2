package core_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	capsulev1beta1 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta1"
	"github.com/wharfhub/wharf/providers/tenantfilter/core"
)

// gps creates a GlobalProxySettings whose rules each name subjects and
// clusterResources entries.
func (e *env) gps(t *testing.T, name string, rules ...map[string]any) {
	t.Helper()
	rs := make([]any, len(rules))
	for i, r := range rules {
		rs[i] = r
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": capsulev1beta1.SchemeGroupVersion.String(), "kind": "GlobalProxySettings",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"rules": rs},
	}}
	if _, err := e.dyn.Resource(capsulev1beta1.GlobalProxySettingsGVR).Create(testCtx(t), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create GlobalProxySettings %s: %v", name, err)
	}
}

// nsRule is one rule: subject kind/name and entries.
func nsRule(kind, subject string, entries ...map[string]any) map[string]any {
	es := make([]any, len(entries))
	for i, en := range entries {
		es[i] = en
	}
	return map[string]any{"subjects": []any{map[string]any{"kind": kind, "name": subject}}, "clusterResources": es}
}

// nsEntry selects the namespace named ns, with operations ops.
func nsEntry(ns string, ops ...any) map[string]any {
	en := map[string]any{"apiGroups": []any{""}, "resources": []any{"namespaces"},
		"selector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}}}
	if len(ops) > 0 {
		en["operations"] = ops
	}
	return en
}

// listNS lists namespaces through the filter as user (a tenant user).
func (f *filter) listNS(t *testing.T, user string, groups ...string) ([]string, error) {
	t.Helper()
	code, body := f.do(t, user, http.MethodGet, "/api/v1/namespaces", "", http.Header{"X-Test-Group": groups})
	if code != http.StatusOK {
		return nil, fmt.Errorf("list: %d %s", code, body)
	}
	var l struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		return nil, err
	}
	out := []string{}
	for _, it := range l.Items {
		out = append(out, it.Metadata.Name)
	}
	slices.Sort(out)
	return out, nil
}

// TestNamespacesGlobalProxySettings: namespace visibility from
// GlobalProxySettings rules on namespaces follows the grants engine.
func TestNamespacesGlobalProxySettings(t *testing.T) {
	e := startEnv(t)
	for _, ns := range []string{"gps-user", "gps-group", "gps-sa", "gps-bare", "gps-void", "gps-get"} {
		e.namespace(t, ns, nil, false)
	}
	const sa = "system:serviceaccount:ops:reader"
	e.gps(t, "by-user", nsRule("User", "carol", nsEntry("gps-user")))
	e.gps(t, "by-group", nsRule("Group", "auditors", nsEntry("gps-group")))
	// Capsule names a ServiceAccount subject by its username.
	e.gps(t, "by-sa", nsRule("ServiceAccount", sa, nsEntry("gps-sa", "List")))
	// Not Capsule's form: selects no ServiceAccount, and above all not
	// the User "reader".
	e.gps(t, "bare-sa", nsRule("ServiceAccount", "reader", nsEntry("gps-bare")))
	// The second entry is invalid (Update is not a global operation): the
	// whole object is not Ready and grants nothing, its valid entry included.
	e.gps(t, "voided", nsRule("User", "dave", nsEntry("gps-void"),
		map[string]any{"apiGroups": []any{""}, "resources": []any{"nodes"}, "operations": []any{"Update"}, "selector": map[string]any{}}))
	e.gps(t, "get-only", nsRule("User", "erin", nsEntry("gps-get", "Get")))

	on := e.startFilter(t, core.Options{RequireCapsuleUser: true, FeatureGates: map[string]bool{core.GateProxyClusterScoped: true}})
	off := e.startFilter(t, core.Options{RequireCapsuleUser: true})

	// Warm: once carol sees her namespace the GlobalProxySettings cache
	// holds every object above (they were all created before the filter),
	// so the empty lists below are not just a cold cache.
	eventually(t, time.Minute, func() error {
		got, err := on.listNS(t, "carol")
		if err != nil || !slices.Equal(got, []string{"gps-user"}) {
			return fmt.Errorf("carol: %v %v", got, err)
		}
		return nil
	})

	for _, c := range []struct {
		name   string
		f      *filter
		user   string
		groups []string
		list   []string
		get    map[string]int
	}{
		{"user subject", on, "carol", nil, []string{"gps-user"}, map[string]int{"gps-user": 200, "gps-group": 404}},
		{"group subject", on, "frank", []string{"auditors"}, []string{"gps-group"}, map[string]int{"gps-group": 200, "gps-user": 404}},
		{"ServiceAccount caller matches its username subject", on, sa, nil, []string{"gps-sa"}, map[string]int{"gps-sa": 200, "gps-bare": 404}},
		{"a User named like a bare ServiceAccount subject gets nothing", on, "reader", nil, []string{}, map[string]int{"gps-bare": 404}},
		{"an invalid entry voids its object", on, "dave", nil, []string{}, map[string]int{"gps-void": 404}},
		{"Get only: named GET, not in the list", on, "erin", nil, []string{}, map[string]int{"gps-get": 200}},
		{"gate off grants nothing", off, "carol", nil, []string{}, map[string]int{"gps-user": 404}},
	} {
		t.Run(c.name, func(t *testing.T) {
			eventually(t, time.Minute, func() error {
				got, err := c.f.listNS(t, c.user, c.groups...)
				if err != nil || !slices.Equal(got, c.list) {
					return fmt.Errorf("list = %v (%v), want %v", got, err, c.list)
				}
				for ns, want := range c.get {
					if code, body := c.f.do(t, c.user, http.MethodGet, "/api/v1/namespaces/"+ns, "", http.Header{"X-Test-Group": c.groups}); code != want {
						return fmt.Errorf("get %s = %d %s, want %d", ns, code, body, want)
					}
				}
				return nil
			})
		})
	}
}
