package tenantfilter

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"

	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
)

// ssar posts a SelfSubjectAccessReview and returns whether it is allowed.
func ssar(t testing.TB, p target, user string, a authorizationv1.ResourceAttributes) bool {
	t.Helper()
	body, _ := json.Marshal(&authorizationv1.SelfSubjectAccessReview{
		TypeMeta: metaType("SelfSubjectAccessReview"),
		Spec:     authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a},
	})
	code, out := p.Do(t, user, http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", string(body), nil)
	expectCode(t, "SSAR "+pretty(a), code, out, http.StatusCreated)
	var r authorizationv1.SelfSubjectAccessReview
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Kind != "SelfSubjectAccessReview" {
		t.Fatalf("SSAR answer (%v): %s", err, out)
	}
	if r.Spec.ResourceAttributes == nil || r.Spec.ResourceAttributes.Verb != a.Verb {
		t.Fatalf("SSAR answer does not echo the spec: %s", out)
	}
	return r.Status.Allowed
}

// TestAccessReviews: k9s and Headlamp ask SSAR/SSRR before they list; the
// provider answers for what it serves and asks the downstream otherwise.
func TestAccessReviews(t *testing.T) {
	pool := uniq("rev")
	mine, other := pool+"-mine", pool+"-other"
	createNode(t, mine, map[string]string{"pool": mine})
	createNode(t, other, map[string]string{"pool": other})
	tnt := newTenant(uniq("rev-t"), userOwner("rules-owner-rev",
		kindOps(capsulev1beta2.NodesProxy, capsulev1beta2.ListOperation, capsulev1beta2.UpdateOperation)))
	tnt.Spec.NodeSelector = map[string]string{"pool": mine}
	tnt = createTenant(t, tnt)
	ns := uniq("rev-ns")
	createTenantNamespace(t, tnt, ns, linkCapsule)
	createGlobalProxySettings(t, uniq("rev-gp"), globalRule("rules-g1", []string{""}, []string{"nodes"}, nil, map[string]string{"pool": other}))

	p := startGrantsTarget(t, grantsOptions{ClusterScoped: true})
	nodes := func(verb, name string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Verb: verb, Version: "v1", Resource: "nodes", Name: name}
	}

	t.Run("class grants", func(t *testing.T) {
		eventually(t, time.Minute, func() error {
			if !ssar(t, p, "rules-owner-rev", nodes("list", "")) {
				return fmt.Errorf("list nodes not allowed")
			}
			return nil
		})
		tests := []struct {
			verb, name string
			want       bool
		}{
			{"get", mine, true}, {"get", other, false}, {"update", mine, true}, {"patch", mine, true},
			{"patch", other, false}, {"delete", mine, false}, {"watch", "", false}, {"create", "", false},
		}
		for _, tt := range tests {
			if got := ssar(t, p, "rules-owner-rev", nodes(tt.verb, tt.name)); got != tt.want {
				t.Errorf("SSAR %s nodes %q = %v, want %v", tt.verb, tt.name, got, tt.want)
			}
		}
	})

	t.Run("global grants never watch or mutate", func(t *testing.T) {
		eventually(t, time.Minute, func() error {
			if !ssar(t, p, "rules-g1", nodes("list", "")) {
				return fmt.Errorf("list nodes not allowed")
			}
			return nil
		})
		for _, v := range []string{"watch", "update", "patch", "delete"} {
			if ssar(t, p, "rules-g1", nodes(v, "")) {
				t.Errorf("SSAR %s nodes allowed by a global rule", v)
			}
		}
		if !ssar(t, p, "rules-g1", nodes("get", other)) || ssar(t, p, "rules-g1", nodes("get", mine)) {
			t.Error("SSAR get by object is not the complete-selector check")
		}
	})

	t.Run("namespaces for everyone", func(t *testing.T) {
		for _, u := range []string{"rules-owner-rev", "rules-viewer", "rules-outsider"} {
			for _, v := range []string{"list", "watch"} {
				if !ssar(t, p, u, authorizationv1.ResourceAttributes{Verb: v, Version: "v1", Resource: "namespaces"}) {
					t.Errorf("%s: SSAR %s namespaces not allowed", u, v)
				}
			}
		}
		if ssar(t, p, "rules-outsider", authorizationv1.ResourceAttributes{Verb: "delete", Version: "v1", Resource: "namespaces", Name: ns}) {
			t.Error("SSAR delete namespace allowed")
		}
	})

	t.Run("everything else asks the downstream", func(t *testing.T) {
		if !ssar(t, p, "rules-owner-rev", authorizationv1.ResourceAttributes{Verb: "create", Version: "v1", Resource: "configmaps", Namespace: ns}) {
			t.Error("an owner's native RBAC in its namespace is not reported")
		}
		if ssar(t, p, "rules-owner-rev", authorizationv1.ResourceAttributes{Verb: "list", Version: "v1", Resource: "pods"}) {
			t.Error("cluster-wide pods allowed without ProxyAllNamespaced")
		}
	})

	t.Run("ProxyAllNamespaced", func(t *testing.T) {
		all := startGrantsTarget(t, grantsOptions{AllNamespaced: true})
		eventually(t, time.Minute, func() error {
			if !ssar(t, all, "rules-owner-rev", authorizationv1.ResourceAttributes{Verb: "list", Version: "v1", Resource: "pods"}) {
				return fmt.Errorf("cluster-wide pods not allowed")
			}
			return nil
		})
		if ssar(t, all, "rules-viewer", authorizationv1.ResourceAttributes{Verb: "list", Version: "v1", Resource: "pods"}) {
			t.Error("cluster-wide pods allowed for a user without tenants")
		}
	})

	t.Run("SSRR appends the provider's grants", func(t *testing.T) {
		body, _ := json.Marshal(&authorizationv1.SelfSubjectRulesReview{
			TypeMeta: metaType("SelfSubjectRulesReview"),
			Spec:     authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns},
		})
		var r authorizationv1.SelfSubjectRulesReview
		eventually(t, time.Minute, func() error {
			code, out := p.Do(t, "rules-owner-rev", http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", string(body), nil)
			if code != http.StatusCreated {
				return fmt.Errorf("SSRR: %d %s", code, out)
			}
			r = authorizationv1.SelfSubjectRulesReview{}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				return err
			}
			if !hasRule(r.Status.ResourceRules, "", "nodes", "get", "list", "patch", "update") {
				return fmt.Errorf("no nodes rule: %s", out)
			}
			return nil
		})
		if !hasRule(r.Status.ResourceRules, "", "namespaces", "list", "watch") {
			t.Errorf("no namespaces rule: %+v", r.Status.ResourceRules)
		}
		// The downstream's own rules (tenant-admin in the namespace) are kept.
		if !hasRule(r.Status.ResourceRules, "*", "*", "*") {
			t.Errorf("the downstream's rules were dropped: %+v", r.Status.ResourceRules)
		}
	})

	t.Run("kubectl auth can-i", func(t *testing.T) {
		out, err := p.Kubectl(t, "rules-owner-rev", "auth", "can-i", "list", "nodes")
		if err != nil || strings.TrimSpace(out) != "yes" {
			t.Fatalf("can-i list nodes: %v: %s", err, out)
		}
		out, _ = p.Kubectl(t, "rules-owner-rev", "auth", "can-i", "delete", "nodes/"+mine)
		if strings.TrimSpace(out) != "no" {
			t.Fatalf("can-i delete node: %s", out)
		}
		out, err = p.Kubectl(t, "rules-owner-rev", "auth", "can-i", "--list", "-n", ns)
		if err != nil || !strings.Contains(out, "nodes") || !strings.Contains(out, "namespaces") {
			t.Fatalf("can-i --list: %v: %s", err, out)
		}
	})
}

func hasRule(rules []authorizationv1.ResourceRule, group, resource string, verbs ...string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Equal(r.Verbs, verbs) {
			return true
		}
	}
	return false
}
