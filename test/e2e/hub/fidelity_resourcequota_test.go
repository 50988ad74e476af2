package hub

import "testing"

// ResourceQuota (issue 24): the hub validates hard limits as
// kube-apiserver does and prints them with its columns. Scopes are left
// out: the hub, serving no pods, refuses them.
func init() {
	registerFidelity("02-valid/resourcequota", func(t *testing.T, f *fidelity) {
		// A namespace of its own: the quotas made here must not bound
		// the other checks' objects.
		ns := f.unique("rq")
		f.Same(t, valPost("/api/v1/namespaces", valObj("v1", "Namespace", ns, nil)))
		p := "/api/v1/namespaces/" + ns + "/resourcequotas"
		rq := func(name string, hard map[string]any) string {
			return valObj("v1", "ResourceQuota", name, map[string]any{"spec": map[string]any{"hard": hard}})
		}
		valCases(t, f, []valCase{
			{"count-core", valPost(p, rq(f.unique("rq"), map[string]any{"count/configmaps": "2"}))},
			{"count-custom", valPost(p, rq(f.unique("rq"), map[string]any{"count/widgets.example.com": "3"}))},
			{"legacy-names", valPost(p, rq(f.unique("rq"), map[string]any{"configmaps": "1", "secrets": "2"}))},
			{"fractional-count", valPost(p, rq(f.unique("rq"), map[string]any{"count/configmaps": "1500m"}))},
			{"fractional-legacy", valPost(p, rq(f.unique("rq"), map[string]any{"secrets": "0.5"}))},
			{"negative", valPost(p, rq(f.unique("rq"), map[string]any{"count/secrets": "-1"}))},
			{"unknown-bare-name", valPost(p, rq(f.unique("rq"), map[string]any{"widgets": "1"}))},
		})
		name := f.unique("rq-table")
		f.Same(t, valPost(p, rq(name, map[string]any{"count/configmaps": "2"})))
		f.Same(t, fidReq{Method: "GET", Path: p + "/" + name, Accept: "application/json;as=Table;v=v1;g=meta.k8s.io"})
	})
}
