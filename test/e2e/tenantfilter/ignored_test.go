package tenantfilter

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestIgnoredIdentities: --ignored-username and --ignored-user-group pass
// through unfiltered with their native permissions; the options grant
// nothing by themselves.
func TestIgnoredIdentities(t *testing.T) {
	p := startProxy(t, proxyOptions{TLS: true, Args: []string{
		"--ignored-username=ignored-user", "--ignored-user-group=" + ignoredGroup}})
	tnt := createTenant(t, newTenant(uniq("ign"), userOwner("alice"), userOwner("ignored-user"), userOwner("ignored-member")))
	ns := uniq("ign-ns")
	createTenantNamespace(t, tnt, ns, linkCapsule)

	// Without native rights the ignored identities get the downstream's
	// Forbidden, not a filtered list: being ignored grants nothing.
	for _, u := range []string{"ignored-user", "ignored-member"} {
		if code, body := p.Do(t, u, http.MethodGet, "/api/v1/namespaces", "", nil); code != http.StatusForbidden {
			t.Fatalf("%s without RBAC: %d, want 403: %s", u, code, body)
		}
	}
	role := uniq("ns-reader")
	fx.ApplyYAML(t, fmt.Sprintf(`
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %[1]s}
rules:
- {apiGroups: [""], resources: [namespaces], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[1]s}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: ignored-user}
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: %[2]s}
`, role, ignoredGroup))
	for _, u := range []string{"ignored-user", "ignored-member"} {
		eventually(t, time.Minute, func() error {
			code, body := p.Do(t, u, http.MethodGet, "/api/v1/namespaces", "", nil)
			if code != http.StatusOK {
				return fmt.Errorf("%s: %d %s", u, code, body)
			}
			got := namespaceNames(t, body)
			for _, want := range []string{"default", "kube-system", ns} {
				if !slices.Contains(got, want) {
					return fmt.Errorf("%s lists %v, unfiltered should include %s", u, got, want)
				}
			}
			return nil
		})
		// A named GET outside any tenant is the native answer, too.
		if code, body := p.Do(t, u, http.MethodGet, "/api/v1/namespaces/kube-system", "", nil); code != http.StatusOK {
			t.Fatalf("%s get kube-system: %d %s", u, code, body)
		}
	}
	// alice, not ignored, stays filtered.
	eventually(t, time.Minute, func() error {
		code, body := p.Do(t, "alice", http.MethodGet, "/api/v1/namespaces", "", nil)
		if code != http.StatusOK {
			return fmt.Errorf("alice: %d %s", code, body)
		}
		if got, want := namespaceNames(t, body), visibleNamespaces(t, "alice"); !slices.Equal(got, want) || !slices.Contains(got, ns) {
			return fmt.Errorf("alice lists %v, want %v with %s", got, want, ns)
		}
		return nil
	})
}
