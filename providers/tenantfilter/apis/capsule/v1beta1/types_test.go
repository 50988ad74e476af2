package v1beta1

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Objects in capsule-proxy's documented shapes decode into our types and
// encode back unchanged.
func TestJSONCompatible(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		obj  any
	}{
		{"GlobalProxySettings", `{"apiVersion":"capsule.clastix.io/v1beta1","kind":"GlobalProxySettings","metadata":{"name":"global-proxy-settings"},
"spec":{"rules":[{"subjects":[{"kind":"User","name":"alice"},{"kind":"Group","name":"devs"}],
"clusterResources":[{"apiGroups":["*"],"resources":["*"],"operations":["List"],"selector":{"matchLabels":{"app.kubernetes.io/type":"dev"}}},
{"apiGroups":["storage.k8s.io"],"resources":["storageclasses"],"selector":{"matchExpressions":[{"key":"tier","operator":"In","values":["a","b"]}]}}]}]},
"status":{"observedGeneration":2,"conditions":[{"type":"Ready","status":"True","observedGeneration":2,"lastTransitionTime":"2026-12-01T17:00:00Z","reason":"Valid","message":"ok"}]}}`,
			&GlobalProxySettings{}},
		{"ProxySetting", `{"apiVersion":"capsule.clastix.io/v1beta1","kind":"ProxySetting","metadata":{"name":"sre-readers","namespace":"solar-production"},
"spec":{"subjects":[{"kind":"User","name":"bob","proxySettings":[{"kind":"IngressClasses","operations":["List","Update","Delete"]},{"kind":"Nodes","operations":["Update","Delete"]}]}]}}`,
			&ProxySetting{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := json.Unmarshal([]byte(tc.in), tc.obj); err != nil {
				t.Fatal(err)
			}
			out, err := json.Marshal(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			var a, b map[string]any
			_ = json.Unmarshal([]byte(tc.in), &a)
			_ = json.Unmarshal(out, &b)
			// Empty metadata/status the encoder adds are not changes.
			for _, m := range []map[string]any{b} {
				if st, ok := m["status"].(map[string]any); ok && len(st) == 0 {
					delete(m, "status")
				}
				if md, ok := m["metadata"].(map[string]any); ok {
					delete(md, "creationTimestamp")
				}
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("round trip changed the object:\n in %v\nout %v", a, b)
			}
		})
	}
	var g GlobalProxySettings
	_ = json.Unmarshal([]byte(`{"spec":{"rules":[{"subjects":[],"clusterResources":[{"apiGroups":[""],"resources":["nodes"],"operations":["Get"],"selector":{}}]}]}}`), &g)
	if op := g.Spec.Rules[0].ClusterResources[0].Operations[0]; op != ClusterResourceOperationGet {
		t.Fatalf("operation %q", op)
	}
	cp := g.DeepCopy()
	cp.Spec.Rules[0].ClusterResources[0].Resources[0] = "pods"
	if g.Spec.Rules[0].ClusterResources[0].Resources[0] != "nodes" {
		t.Fatal("DeepCopy shares resources")
	}
}
