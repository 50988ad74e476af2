package agent

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhub/wharf/test/kube"
)

// edgeRBAC: the agent may impersonate and read namespaces; alice may read
// namespaces; bob may do nothing.
const edgeRBAC = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: edge-agent}
rules:
- {apiGroups: [""], resources: [users, groups], verbs: [impersonate]}
- {apiGroups: [""], resources: [namespaces], verbs: [list, get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: edge-agent}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edge-agent}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: edge-agent}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ns-reader}
rules:
- {apiGroups: [""], resources: [namespaces], verbs: [list, get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-ns-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ns-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
`

// TestIdentityAgainstKubeAPIServer: through the tunnel to a real
// kube-apiserver, impersonate mode lets the edge's RBAC allow alice and
// deny bob, each seen as themselves; agent mode makes both act as the
// agent. A forged system:masters group changes nothing.
func TestIdentityAgainstKubeAPIServer(t *testing.T) {
	c := kube.Start(t, kube.Options{Users: []kube.User{{Name: "edge-agent"}}})
	c.ApplyYAML(t, edgeRBAC)
	agentCfg := c.UserConfig(t, "edge-agent")

	whoami := func(t *testing.T, client *http.Client, user string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, "http://edge/apis/authentication.k8s.io/v1/selfsubjectreviews",
			strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Wharf-Edge-User", user)
		req.Header.Add("X-Wharf-Edge-Group", "system:masters")
		req.Header.Set("Impersonate-Group", "system:masters")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var ssr struct {
			Status struct {
				UserInfo struct {
					Username string   `json:"username"`
					Groups   []string `json:"groups"`
				} `json:"userInfo"`
			} `json:"status"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&ssr)
		for _, g := range ssr.Status.UserInfo.Groups {
			if g == "system:masters" {
				t.Fatalf("%s reached the edge in system:masters", user)
			}
		}
		return resp.StatusCode, ssr.Status.UserInfo.Username
	}

	for _, tc := range []struct {
		mode      IdentityMode
		edge      string
		aliceCode int
		bobCode   int
		aliceIs   string
		bobIs     string
	}{
		{IdentityImpersonate, "imp", 200, 403, "alice", "bob"},
		{IdentityAgent, "agt", 200, 200, "edge-agent", "edge-agent"},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			hub := newTestHub(t, "c0ffee0000000005", tc.edge)
			_, _ = runAgent(t, Config{StateDir: filepath.Join(t.TempDir(), "st"), Join: hub.bundle("kubernetes", "tok"),
				RestConfig: agentCfg, Identity: tc.mode})
			client := hub.httpClient()
			if code, body := getAs(t, client, "/api/v1/namespaces", "alice"); code != tc.aliceCode {
				t.Fatalf("alice lists namespaces: %d %s", code, body)
			}
			if code, body := getAs(t, client, "/api/v1/namespaces", "bob"); code != tc.bobCode {
				t.Fatalf("bob lists namespaces: %d %s", code, body)
			}
			if code, who := whoami(t, client, "alice"); code != 201 || who != tc.aliceIs {
				t.Fatalf("alice is seen as %q (%d), want %q", who, code, tc.aliceIs)
			}
			if code, who := whoami(t, client, "bob"); code != 201 || who != tc.bobIs {
				t.Fatalf("bob is seen as %q (%d), want %q", who, code, tc.bobIs)
			}
		})
	}
}
