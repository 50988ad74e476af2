package tenantfilter

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	capsulev1beta1 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta1"
)

var (
	opList = []capsulev1beta1.ClusterResourceOperation{capsulev1beta1.ClusterResourceOperationList}
	opGet  = []capsulev1beta1.ClusterResourceOperation{capsulev1beta1.ClusterResourceOperationGet}
)

// TestGlobalProxySettings is capsule-proxy's GlobalProxySettings suite on
// nodes: basic, the union of rules, Get-only, a rule selecting nothing, two
// rules on different keys, a partial selector match, and no watch or
// mutation ever.
func TestGlobalProxySettings(t *testing.T) {
	pool := uniq("gp")
	nodeA, nodeB, nodeC := pool+"-a", pool+"-b", pool+"-c"
	createNode(t, nodeA, map[string]string{"pool": pool + "-a", "zone": pool})
	createNode(t, nodeB, map[string]string{"pool": pool + "-b"})
	createNode(t, nodeC, map[string]string{"pool": pool + "-c", "zone": pool})
	core := []string{""}
	nodes := []string{"nodes"}
	// rules-g1: basic; rules-g2: union of two rules (one In each);
	// rules-g3: Get only; rules-g4: selects nothing; rules-g5: two rules on
	// different keys; rules-g6: a two-label selector nodeB only half matches.
	createGlobalProxySettings(t, uniq("gp-basic"), globalRule("rules-g1", core, nodes, nil, map[string]string{"pool": pool + "-a"}))
	createGlobalProxySettings(t, uniq("gp-union-1"), globalRule("rules-g2", core, nodes, opList, map[string]string{"pool": pool + "-a"}))
	createGlobalProxySettings(t, uniq("gp-union-2"), globalRule("rules-g2", []string{"*/v1"}, []string{"*"}, nil, map[string]string{"pool": pool + "-b"}))
	createGlobalProxySettings(t, uniq("gp-get"), globalRule("rules-g3", core, nodes, opGet, map[string]string{"pool": pool + "-b"}))
	createGlobalProxySettings(t, uniq("gp-none"), globalRule("rules-g4", core, nodes, nil, map[string]string{"pool": pool + "-nothing"}))
	createGlobalProxySettings(t, uniq("gp-keys"),
		globalRule("rules-g5", core, nodes, nil, map[string]string{"pool": pool + "-a"}),
		globalRule("rules-g5", core, nodes, nil, map[string]string{"zone": pool}))
	createGlobalProxySettings(t, uniq("gp-partial"), globalRule("rules-g6", core, nodes, nil, map[string]string{"pool": pool + "-b", "zone": pool}))
	// A global rule on a namespaced kind grants nothing.
	createGlobalProxySettings(t, uniq("gp-pods"), globalRule("rules-g1", core, []string{"pods"}, nil, map[string]string{}))

	p := startGrantsTarget(t, grantsOptions{ClusterScoped: true})
	list := func(user string) (int, string) {
		return p.Do(t, user, http.MethodGet, "/api/v1/nodes", "", nil)
	}
	get := func(user, name string) (int, string) {
		return p.Do(t, user, http.MethodGet, "/api/v1/nodes/"+name, "", nil)
	}

	t.Run("basic", func(t *testing.T) {
		eventually(t, time.Minute, func() error {
			code, body := list("rules-g1")
			if code != http.StatusOK {
				return fmt.Errorf("list: %d %s", code, body)
			}
			if got := only(listNames(t, body), pool); len(got) != 1 || got[0] != nodeA {
				return fmt.Errorf("list = %v", got)
			}
			return nil
		})
		code, body := get("rules-g1", nodeA)
		expectCode(t, "get granted node", code, body, http.StatusOK)
		code, body = get("rules-g1", nodeB)
		expectCode(t, "get other node", code, body, http.StatusNotFound)
		if st := status(t, body); st.Message != fmt.Sprintf("nodes %q not found", nodeB) || st.Reason != "NotFound" {
			t.Fatalf("404 is not kube-apiserver's: %+v", st)
		}
		// kubectl's Table has only the granted row.
		out, err := p.Kubectl(t, "rules-g1", "get", "nodes", "-o", "name")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, nodeB) || !strings.Contains(out, nodeA) {
			t.Fatalf("kubectl get nodes: %s", out)
		}
		out, err = p.Kubectl(t, "rules-g1", "get", "nodes")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "NAME") || !strings.Contains(out, "STATUS") || !strings.Contains(out, nodeA) || strings.Contains(out, nodeB) {
			t.Fatalf("kubectl get nodes (table): %s", out)
		}
	})

	t.Run("union", func(t *testing.T) {
		eventually(t, time.Minute, func() error {
			code, body := list("rules-g2")
			if code != http.StatusOK {
				return fmt.Errorf("list: %d %s", code, body)
			}
			if got := only(listNames(t, body), pool); fmt.Sprint(got) != fmt.Sprint([]string{nodeA, nodeB}) {
				return fmt.Errorf("list = %v", got)
			}
			return nil
		})
		code, body := get("rules-g2", nodeC)
		expectCode(t, "get outside the union", code, body, http.StatusNotFound)
	})

	t.Run("get only", func(t *testing.T) {
		eventually(t, time.Minute, func() error {
			if code, body := get("rules-g3", nodeB); code != http.StatusOK {
				return fmt.Errorf("get: %d %s", code, body)
			}
			return nil
		})
		code, body := get("rules-g3", nodeA)
		expectCode(t, "get outside the selector", code, body, http.StatusNotFound)
		// No list grant: forwarded impersonated, and the downstream's
		// RBAC denies the user.
		code, body = list("rules-g3")
		expectCode(t, "list with a Get-only rule", code, body, http.StatusForbidden)
	})

	t.Run("selects nothing", func(t *testing.T) {
		eventually(t, time.Minute, func() error {
			code, body := list("rules-g4")
			if code != http.StatusOK {
				return fmt.Errorf("list: %d %s", code, body)
			}
			if got := listNames(t, body); len(got) != 0 {
				return fmt.Errorf("list = %v, want empty", got)
			}
			return nil
		})
	})

	t.Run("different keys", func(t *testing.T) {
		eventually(t, time.Minute, func() error {
			if code, body := list("rules-g5"); code != http.StatusBadRequest {
				return fmt.Errorf("list: %d %s, want 400", code, body)
			}
			return nil
		})
		_, body := list("rules-g5")
		if st := status(t, body); st.Reason != "BadRequest" {
			t.Fatalf("400 reason: %+v", st)
		}
		// Named requests still work per complete selector.
		for _, n := range []string{nodeA, nodeC} {
			code, body := get("rules-g5", n)
			expectCode(t, "get "+n, code, body, http.StatusOK)
		}
		code, body := get("rules-g5", nodeB)
		expectCode(t, "get outside both", code, body, http.StatusNotFound)
	})

	t.Run("partial selector match", func(t *testing.T) {
		eventually(t, time.Minute, func() error {
			code, body := list("rules-g6")
			if code != http.StatusOK {
				return fmt.Errorf("list: %d %s", code, body)
			}
			if got := only(listNames(t, body), pool); len(got) != 0 {
				return fmt.Errorf("list = %v, want empty", got)
			}
			return nil
		})
		code, body := get("rules-g6", nodeB)
		expectCode(t, "get a half-matching node", code, body, http.StatusNotFound)
	})

	t.Run("never watch or mutate", func(t *testing.T) {
		code, body := p.Do(t, "rules-g1", http.MethodGet, "/api/v1/nodes?watch=true&timeoutSeconds=1", "", nil)
		expectCode(t, "watch", code, body, http.StatusForbidden)
		patch := http.Header{"Content-Type": {"application/merge-patch+json"}}
		code, body = p.Do(t, "rules-g1", http.MethodPatch, "/api/v1/nodes/"+nodeA, `{"metadata":{"labels":{"x":"y"}}}`, patch)
		expectCode(t, "patch", code, body, http.StatusForbidden)
		code, body = p.Do(t, "rules-g1", http.MethodDelete, "/api/v1/nodes/"+nodeA+"?dryRun=All", "", nil)
		expectCode(t, "delete", code, body, http.StatusForbidden)
		// The namespaced rule gave nothing either.
		code, body = p.Do(t, "rules-g1", http.MethodGet, "/api/v1/pods", "", nil)
		expectCode(t, "pods across namespaces", code, body, http.StatusForbidden)
	})

	t.Run("gate off", func(t *testing.T) {
		off := startGrantsTarget(t, grantsOptions{})
		code, body := off.Do(t, "rules-g1", http.MethodGet, "/api/v1/nodes", "", nil)
		expectCode(t, "list with ProxyClusterScoped off", code, body, http.StatusForbidden)
	})

	t.Run("non tenant callers", func(t *testing.T) {
		createGlobalProxySettings(t, uniq("gp-outsider"), globalRule("rules-outsider", core, nodes, nil, map[string]string{"pool": pool + "-a"}))
		// With --require-capsule-user (the default) the outsider keeps
		// the downstream's RBAC.
		eventually(t, time.Minute, func() error {
			if code, body := list("rules-outsider"); code != http.StatusForbidden {
				return fmt.Errorf("list: %d %s, want 403", code, body)
			}
			return nil
		})
		open := startGrantsTarget(t, grantsOptions{ClusterScoped: true, NoRequireCapsuleUser: true})
		eventually(t, time.Minute, func() error {
			code, body := open.Do(t, "rules-outsider", http.MethodGet, "/api/v1/nodes", "", nil)
			if code != http.StatusOK {
				return fmt.Errorf("list: %d %s", code, body)
			}
			if got := only(listNames(t, body), pool); len(got) != 1 || got[0] != nodeA {
				return fmt.Errorf("list = %v", got)
			}
			return nil
		})
	})
}

// TestGrantedReadsFromCache: once warm, a granted JSON list or named GET of
// a cluster-scoped kind is answered from the informer: the downstream sees
// no request for it (counted by a recording proxy in front of the
// kube-apiserver).
func TestGrantedReadsFromCache(t *testing.T) {
	pool := uniq("gpc")
	node := pool + "-a"
	createNode(t, node, map[string]string{"pool": node})
	createGlobalProxySettings(t, uniq("gpc"), globalRule("rules-g1", []string{""}, []string{"nodes"}, nil, map[string]string{"pool": node}))
	rec, kc := startRecorder(t)
	p := startProxy(t, proxyOptions{TLS: true, Kubeconfig: kc, Args: grantsOptions{ClusterScoped: true}.args()})
	eventually(t, time.Minute, func() error {
		code, body := p.Do(t, "rules-g1", http.MethodGet, "/api/v1/nodes", "", nil)
		if code != http.StatusOK || len(only(listNames(t, body), pool)) != 1 {
			return fmt.Errorf("list: %d %s", code, body)
		}
		return nil
	})
	beforeNodes, beforeAll := len(rec.requests("/api/v1/nodes")), len(rec.requests("/"))
	const n = 10
	for range n {
		code, body := p.Do(t, "rules-g1", http.MethodGet, "/api/v1/nodes", "", nil)
		expectCode(t, "list", code, body, http.StatusOK)
		code, body = p.Do(t, "rules-g1", http.MethodGet, "/api/v1/nodes/"+node, "", nil)
		expectCode(t, "get", code, body, http.StatusOK)
	}
	nodes, all := len(rec.requests("/api/v1/nodes"))-beforeNodes, len(rec.requests("/"))-beforeAll
	t.Logf("%d granted reads: %d downstream requests for nodes, %d downstream requests in all (%.2f per read)", 2*n, nodes, all, float64(all)/float64(2*n))
	if nodes != 0 {
		t.Fatalf("granted reads went downstream %d times; want none once warm", nodes)
	}
	if all > 2*n {
		t.Fatalf("%d downstream requests for %d reads; want at most one each", all, 2*n)
	}
}
