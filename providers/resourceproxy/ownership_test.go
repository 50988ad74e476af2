package resourceproxy

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var alice = owner{Cluster: "abc123", Workspace: "team-a"}

func TestOwnerOf(t *testing.T) {
	if o := ownerOf("id1", "root:acme:team-a"); o.Workspace != "team-a" || o.Cluster != "id1" {
		t.Fatalf("ownerOf = %+v", o)
	}
	if o := ownerOf("id1", "root"); o.Workspace != "root" {
		t.Fatalf("ownerOf root = %+v", o)
	}
}

func TestInjectSelector(t *testing.T) {
	for _, tc := range []struct{ query, want string }{
		{"", "proxy.wharf.dev/owner-cluster=abc123,proxy.wharf.dev/owner-workspace=team-a"},
		{"labelSelector=app%3Ddb&limit=5", "app=db,proxy.wharf.dev/owner-cluster=abc123,proxy.wharf.dev/owner-workspace=team-a"},
		// A caller's own owner selector cannot widen the view: both terms
		// must hold, so another owner's value matches nothing.
		{"labelSelector=proxy.wharf.dev%2Fowner-cluster%3Dother", "proxy.wharf.dev/owner-cluster=other,proxy.wharf.dev/owner-cluster=abc123,proxy.wharf.dev/owner-workspace=team-a"},
		{"watch=true&resourceVersion=5", "proxy.wharf.dev/owner-cluster=abc123,proxy.wharf.dev/owner-workspace=team-a"},
	} {
		q, _ := url.ParseQuery(tc.query)
		out, _ := url.ParseQuery(injectSelector(q, alice))
		if got := out.Get("labelSelector"); got != tc.want {
			t.Errorf("query %q: selector %q, want %q", tc.query, got, tc.want)
		}
		if orig, _ := url.ParseQuery(tc.query); orig.Get("limit") != out.Get("limit") || orig.Get("watch") != out.Get("watch") {
			t.Errorf("query %q: other parameters changed: %v", tc.query, out)
		}
	}
}

func TestOwns(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{OwnerClusterLabel: "abc123", OwnerWorkspaceLabel: "team-a"}, true},
		{map[string]string{OwnerClusterLabel: "abc123"}, false}, // both labels are needed
		{map[string]string{OwnerWorkspaceLabel: "team-a"}, false},
		{map[string]string{OwnerClusterLabel: "other", OwnerWorkspaceLabel: "team-a"}, false},
		{nil, false},
	} {
		if got := alice.owns(tc.labels); got != tc.want {
			t.Errorf("owns(%v) = %v", tc.labels, got)
		}
	}
}

func labelsOf(t *testing.T, b []byte) map[string]string {
	t.Helper()
	l, err := objectLabels(b)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestInjectLabels(t *testing.T) {
	mine := map[string]string{OwnerClusterLabel: "abc123", OwnerWorkspaceLabel: "team-a"}
	for _, tc := range []struct {
		name, ctype, body string
		overwrite         bool
		ok                bool
		want              map[string]string
	}{
		{"create without labels", "application/json", `{"kind":"Database","metadata":{"name":"x"}}`, true, true, mine},
		{"create without metadata", "application/json", `{"kind":"Database"}`, true, true, mine},
		{"forged owner is overwritten", "application/json; charset=utf-8", `{"metadata":{"labels":{"proxy.wharf.dev/owner-cluster":"bob","app":"db"}}}`, true, true,
			map[string]string{OwnerClusterLabel: "abc123", OwnerWorkspaceLabel: "team-a", "app": "db"}},
		{"mode all keeps another owner", "application/merge-patch+json", `{"metadata":{"labels":{"proxy.wharf.dev/owner-cluster":"bob","proxy.wharf.dev/owner-workspace":"b"}}}`, false, true,
			map[string]string{OwnerClusterLabel: "bob", OwnerWorkspaceLabel: "b"}},
		{"merge patch", "application/merge-patch+json", `{"spec":{"size":2}}`, true, true, mine},
		{"not an object", "application/json", `[1,2]`, true, false, nil},
		{"garbage", "application/json", `{`, true, false, nil},
		{"no content type is JSON to kube-apiserver", "", `{"metadata":{"labels":{"proxy.wharf.dev/owner-cluster":"bob"}}}`, true, true, mine},
		{"a YAML body", "application/yaml", "metadata:\n  labels:\n    proxy.wharf.dev/owner-cluster: bob\n    proxy.wharf.dev/owner-workspace: b\n", true, true, mine},
		{"protobuf left alone", "application/vnd.kubernetes.protobuf", "\x00k8s", true, false, nil},
	} {
		out, ctype, ok := injectLabels([]byte(tc.body), tc.ctype, alice, tc.overwrite)
		if ok != tc.ok {
			t.Errorf("%s: ok = %v", tc.name, ok)
			continue
		}
		if !ok {
			if string(out) != tc.body || ctype != tc.ctype {
				t.Errorf("%s: a failed injection changed the request", tc.name)
			}
			continue
		}
		got := labelsOf(t, out)
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: labels %v, want %v", tc.name, got, tc.want)
			}
		}
	}
}

func TestInjectLabelsApplyYAML(t *testing.T) {
	body := "apiVersion: example.com/v1\nkind: Database\nmetadata:\n  name: x\nspec:\n  size: 1\n"
	out, ctype, ok := injectLabels([]byte(body), "application/apply-patch+yaml", alice, true)
	if !ok || ctype != "application/apply-patch+yaml" {
		t.Fatalf("ok %v ctype %q", ok, ctype)
	}
	j, err := yaml.YAMLToJSON(out)
	if err != nil {
		t.Fatal(err)
	}
	if l := labelsOf(t, j); !alice.owns(l) {
		t.Fatalf("labels %v", l)
	}
	if !strings.Contains(string(j), `"size":1`) {
		t.Fatalf("spec lost: %s", j)
	}
}

func TestInjectLabelsJSONPatch(t *testing.T) {
	out, _, ok := injectLabels([]byte(`[{"op":"replace","path":"/spec/size","value":3}]`), "application/json-patch+json", alice, true)
	if !ok {
		t.Fatal("json patch not injected")
	}
	var ops []map[string]any
	if err := json.Unmarshal(out, &ops); err != nil {
		t.Fatal(err)
	}
	paths := map[string]any{}
	for _, op := range ops {
		paths[op["path"].(string)] = op["value"]
	}
	if paths["/metadata/labels/proxy.wharf.dev~1owner-cluster"] != "abc123" || paths["/metadata/labels/proxy.wharf.dev~1owner-workspace"] != "team-a" || paths["/spec/size"] != float64(3) {
		t.Fatalf("ops %s", out)
	}
}
