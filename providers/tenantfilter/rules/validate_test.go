package rules

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestValidateGlobal is the one validation of clusterResources entries,
// the status controller's and the engine's: each refusal carries the
// reason the Ready condition shows and names its entry.
func TestValidateGlobal(t *testing.T) {
	discovered := []Resource{nodesRes, scRes,
		{Group: "example.com", Version: "v1", Resource: "widgets", Verbs: []string{"list", "watch"}},
		{Version: "v1", Resource: "pods", Namespaced: true, Verbs: []string{"get", "list"}},
		{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews", Verbs: []string{"create"}},
	}
	cr := func(groups, resources []string, ops ...string) ClusterResource {
		return ClusterResource{APIGroups: groups, Resources: resources, Operations: ops, Selector: ptr(ml("a", "b"))}
	}
	badSel := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}
	tests := []struct {
		name   string
		cr     ClusterResource
		reason string // "" valid
		inMsg  string
	}{
		{name: "valid", cr: nodeCR([]string{"List", "Get"}, "a", "b")},
		{name: "ops omitted", cr: cr([]string{""}, []string{"nodes"})},
		{name: "bad operation", cr: nodeCR([]string{"Watch"}), reason: ReasonInvalidOperation, inMsg: `"Watch"`},
		{name: "update refused", cr: nodeCR([]string{"List", "Update"}), reason: ReasonInvalidOperation, inMsg: `"Update"`},
		{name: "empty groups select nothing but are valid", cr: ClusterResource{Resources: []string{"nodes"}, Selector: ptr(ml())}},
		{name: "empty resources select nothing but are valid", cr: ClusterResource{APIGroups: []string{""}, Selector: ptr(ml())}},
		{name: "no selector", cr: ClusterResource{APIGroups: []string{""}, Resources: []string{"nodes"}}, reason: ReasonInvalidSelector, inMsg: "required"},
		{name: "bad selector key", cr: nodeCR(nil, "bad key!", "x"), reason: ReasonInvalidSelector},
		{name: "bad selector operator", cr: ClusterResource{APIGroups: []string{""}, Resources: []string{"nodes"}, Selector: badSel}, reason: ReasonInvalidSelector},
		{name: "kind without get", cr: cr([]string{"example.com"}, []string{"widgets"}), reason: ReasonUnsupportedResource, inMsg: "widgets.example.com (v1)"},
		{name: "kind without get through *", cr: cr([]string{"*"}, []string{"selfsubjectaccessreviews"}), reason: ReasonUnsupportedResource},
		{name: "namespaced kind", cr: cr([]string{""}, []string{"pods"}), reason: ReasonNamespacedResource, inMsg: "pods (v1)"},
		{name: "wildcard resources skip unsuitable kinds", cr: cr([]string{"*"}, []string{"*"})},
		{name: "not yet discovered", cr: cr([]string{"later.example.com"}, []string{"gadgets"})},
		{name: "other group's kind of that name", cr: cr([]string{"example.com"}, []string{"pods"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := globalRule(Subject{Kind: KindUser, Name: "x"}, nodeCR(nil, "ok", "1"), tt.cr)
			errs := ValidateGlobal(g, discovered)
			if tt.reason == "" {
				if len(errs) != 0 {
					t.Fatalf("errors = %v, want none", errs)
				}
			} else {
				if len(errs) != 1 {
					t.Fatalf("errors = %v, want one", errs)
				}
				msg := errs[0].Error()
				if got := ReasonOf(errs[0]); got != tt.reason {
					t.Errorf("reason = %q, want %q (%s)", got, tt.reason, msg)
				}
				if !strings.HasPrefix(msg, "rules[0].clusterResources[1]: ") || !strings.Contains(msg, tt.inMsg) {
					t.Errorf("message %q does not name the entry and %q", msg, tt.inMsg)
				}
			}
			// The engine judges the object exactly as the controller does.
			if got, want := globalValid(g, discovered), tt.reason == ""; got != want {
				t.Errorf("globalValid = %v, want %v", got, want)
			}
		})
	}
}
