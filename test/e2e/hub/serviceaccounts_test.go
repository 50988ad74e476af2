package hub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestServiceAccountTokens: kubectl create token mints a token that works
// in its workspace under that workspace's RBAC, is refused (403) in every
// other workspace even where a binding names system:serviceaccounts, and
// stops working (401) within a second of the ServiceAccount's deletion.
func TestServiceAccountTokens(t *testing.T) {
	t.Parallel()
	h := startHub(t, hubOptions{})
	idA := h.createWorkspace("root", "sa-a")
	idB := h.createWorkspace("root", "sa-b")
	wsA, wsB := "root:sa-a", "root:sa-b"

	h.mustKubectl(wsA, "create", "serviceaccount", "bot", "-n", "default")
	h.mustKubectl(wsA, "create", "rolebinding", "bot-view", "--clusterrole=view", "--serviceaccount=default:bot", "-n", "default")
	h.mustKubectl(wsA, "create", "configmap", "in-a", "-n", "default", "--from-literal=k=v")
	uid := h.mustKubectl(wsA, "get", "serviceaccount", "bot", "-n", "default", "-o", "jsonpath={.metadata.uid}")
	// In B every service account may read: only the workspace binding
	// can keep A's token out.
	h.mustKubectl(wsB, "create", "clusterrolebinding", "all-service-accounts", "--clusterrole=view", "--group=system:serviceaccounts")
	h.mustKubectl(wsB, "create", "configmap", "in-b", "-n", "default", "--from-literal=k=v")

	token := h.mustKubectl(wsA, "create", "token", "bot", "-n", "default")
	if strings.Count(token, ".") != 2 {
		t.Fatalf("kubectl create token printed %q", token)
	}
	asBot := func(ws string, args ...string) (string, error) {
		return h.kubectl(ws, append([]string{"--token", token}, args...)...)
	}
	// RBAC reaches the authorizer through a watch: wait for the binding.
	eventually(t, 30*time.Second, func() error {
		out, err := asBot(wsA, "get", "configmaps", "-n", "default", "-o", "name")
		if err != nil || !strings.Contains(out, "configmap/in-a") {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	if out, err := asBot(wsA, "create", "configmap", "nope", "-n", "default"); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("view token created a configmap: %v %s", err, out)
	}

	t.Run("SelfSubjectReview", func(t *testing.T) {
		out, err := asBot(wsA, "auth", "whoami", "-o", "json")
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var r struct {
			Status struct {
				UserInfo struct {
					Username string              `json:"username"`
					UID      string              `json:"uid"`
					Groups   []string            `json:"groups"`
					Extra    map[string][]string `json:"extra"`
				} `json:"userInfo"`
			} `json:"status"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		u := r.Status.UserInfo
		wantGroups := []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:cluster:" + idA, "system:authenticated"}
		if u.Username != "system:serviceaccount:default:bot" || u.UID != uid || !slices.Equal(u.Groups, wantGroups) ||
			!slices.Equal(u.Extra["wharf.dev/cluster"], []string{idA}) {
			t.Fatalf("whoami = %+v, want groups %v uid %s", u, wantGroups, uid)
		}
	})

	t.Run("other workspaces are forbidden", func(t *testing.T) {
		// B's binding is live for B's own service accounts.
		h.mustKubectl(wsB, "create", "serviceaccount", "local", "-n", "default")
		local := h.mustKubectl(wsB, "create", "token", "local", "-n", "default")
		eventually(t, 30*time.Second, func() error {
			if out, err := h.kubectl(wsB, "--token", local, "get", "configmap", "in-b", "-n", "default"); err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		})
		if out, err := asBot(wsB, "get", "configmaps", "-n", "default"); err == nil || !strings.Contains(strings.ToLower(out), "forbidden") {
			t.Errorf("A's token in B via kubectl: %v %s", err, out)
		}
		for _, path := range []string{
			"/clusters/" + wsB + "/api/v1/namespaces/default/configmaps",
			"/clusters/" + idB + "/api/v1/namespaces/default/configmaps/in-b",
			"/clusters/" + wsB + "/api",
			"/clusters/*/api/v1/configmaps",
			"/api/v1/namespaces/default/configmaps",
		} {
			code, body := h.doAs(token, http.MethodGet, path, "")
			if code != http.StatusForbidden || decodeStatus(t, body).Code != http.StatusForbidden {
				t.Errorf("GET %s with A's token: %d %s", path, code, body)
			}
		}
	})

	t.Run("token for another audience", func(t *testing.T) {
		vault := h.mustKubectl(wsA, "create", "token", "bot", "-n", "default", "--audience", "vault")
		if code, body := h.doAs(vault, http.MethodGet, "/clusters/"+wsA+"/api/v1/namespaces/default/configmaps", ""); code != http.StatusUnauthorized {
			t.Errorf("audience vault: %d %s", code, body)
		}
		if out, err := h.kubectl(wsA, "create", "token", "bot", "-n", "default", "--duration", "5m"); err == nil {
			t.Errorf("a 5 minute token was minted: %s", out)
		}
	})

	t.Run("deleting the service account revokes", func(t *testing.T) {
		path := "/clusters/" + wsA + "/api/v1/namespaces/default/configmaps"
		if code, body := h.doAs(token, http.MethodGet, path, ""); code != http.StatusOK {
			t.Fatalf("before delete: %d %s", code, body)
		}
		if code, body := h.doAs(h.Token, http.MethodDelete, "/clusters/"+wsA+"/api/v1/namespaces/default/serviceaccounts/bot", ""); code != http.StatusOK {
			t.Fatalf("delete: %d %s", code, body)
		}
		// The one timed assertion the issue asks for: 401 within a second.
		deleted := time.Now()
		var code int
		var body string
		for {
			code, body = h.doAs(token, http.MethodGet, path, "")
			if code == http.StatusUnauthorized || time.Since(deleted) > time.Second {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if code != http.StatusUnauthorized || decodeStatus(t, body).Code != http.StatusUnauthorized {
			t.Fatalf("%s after delete: %d %s", time.Since(deleted), code, body)
		}
		t.Logf("refused %s after the delete returned", time.Since(deleted))
		// A new ServiceAccount of the same name does not revive the token.
		h.mustKubectl(wsA, "create", "serviceaccount", "bot", "-n", "default")
		if code, body := h.doAs(token, http.MethodGet, path, ""); code != http.StatusUnauthorized {
			t.Fatalf("token revived by a same-name service account: %d %s", code, body)
		}
	})
}

// TestServiceAccountTokensAcrossReplicas: two hubs on one etcd (same
// --external-url, as behind a load balancer) share the signing key, so a
// token minted by one works on the other, and a deletion through either
// revokes it on both.
func TestServiceAccountTokensAcrossReplicas(t *testing.T) {
	t.Parallel()
	_, endpoints := externalEtcd(t)
	args := []string{"--external-url", "https://wharf.example.test"}
	h1 := startHub(t, hubOptions{etcdServers: endpoints, extraArgs: args})
	h2 := startHub(t, hubOptions{etcdServers: endpoints, extraArgs: args})
	h1.createWorkspace("root", "replicated")
	ws := "root:replicated"
	h1.mustKubectl(ws, "create", "serviceaccount", "bot", "-n", "default")
	h1.mustKubectl(ws, "create", "rolebinding", "bot-view", "--clusterrole=view", "--serviceaccount=default:bot", "-n", "default")
	token := h1.mustKubectl(ws, "create", "token", "bot", "-n", "default")

	path := "/clusters/" + ws + "/api/v1/namespaces/default/configmaps"
	for _, h := range []*hubProc{h1, h2} {
		eventually(t, 30*time.Second, func() error {
			if code, body := h.doAs(token, http.MethodGet, path, ""); code != http.StatusOK {
				return fmt.Errorf("%s: %d %s", h.URL, code, body)
			}
			return nil
		})
	}
	if code, body := h2.doAs(h2.Token, http.MethodDelete, "/clusters/"+ws+"/api/v1/namespaces/default/serviceaccounts/bot", ""); code != http.StatusOK {
		t.Fatalf("delete through h2: %d %s", code, body)
	}
	// Every read of the ServiceAccount is a consistent etcd read, so the
	// other replica refuses at once; one second is the bound.
	deleted := time.Now()
	for {
		code, body := h1.doAs(token, http.MethodGet, path, "")
		if code == http.StatusUnauthorized {
			break
		}
		if time.Since(deleted) > time.Second {
			t.Fatalf("h1 still accepts the token %s after the delete through h2: %d %s", time.Since(deleted), code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
