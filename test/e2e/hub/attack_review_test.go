package hub

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Rows from the attack review of issue 11: a helper briefed only with the
// README attacked the hub as a person (admin of their own home). Findings
// already in the issue are rows of their own files; these are the new ones.
func init() {
	registerAttacks(
		attack{finding: "review:B6", name: "a huge aggregated ClusterRole in one's own home stalls nobody else",
			before: func(e *attackEnv, vars map[string]string) error {
				type rule struct {
					Verbs         []string `json:"verbs"`
					APIGroups     []string `json:"apiGroups"`
					Resources     []string `json:"resources"`
					ResourceNames []string `json:"resourceNames"`
				}
				rules := make([]rule, 6000)
				for i := range rules {
					rules[i] = rule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{fmt.Sprintf("n%d", i)}}
				}
				b, err := json.Marshal(map[string]any{
					"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
					"metadata": map[string]any{"name": "big-" + vars["n"], "labels": map[string]string{
						"rbac.authorization.k8s.io/aggregate-to-admin": "true",
						"rbac.authorization.k8s.io/aggregate-to-edit":  "true",
						"rbac.authorization.k8s.io/aggregate-to-view":  "true",
					}},
					"rules": rules,
				})
				vars["big"] = string(b)
				return err
			},
			steps: []step{
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/apis/rbac.authorization.k8s.io/v1/clusterroles", body: "{big}", want: http.StatusCreated},
				// At once, within the client's timeout: other workspaces'
				// decisions do not wait for bob's workspace to be indexed.
				{as: "alice", method: http.MethodGet, path: "/clusters/{aliceHome}/api/v1/namespaces/default/configmaps", want: http.StatusOK},
				{as: "carol", method: http.MethodGet, path: "/api/whoami", want: http.StatusOK},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}/apis/rbac.authorization.k8s.io/v1/clusterroles/big-{n}",
					body: `{"metadata":{"labels":{"again":"1"}}}`, want: http.StatusOK},
				{as: "alice", method: http.MethodGet, path: "/clusters/{aliceHome}/api/v1/namespaces/default/configmaps", want: http.StatusOK},
			},
			after: func(e *attackEnv, vars map[string]string) error {
				return e.wantAs(http.StatusOK, "bob", http.MethodDelete, "/clusters/{bobHome}/apis/rbac.authorization.k8s.io/v1/clusterroles/big-{n}", "", vars)
			}},
	)
}

// review:B6b: a workspace's RBAC is bounded (--max-workspace-rbac-rules,
// default 20000) on every write path, so no tenant makes the hub index,
// copy and aggregate without end.
func init() {
	bigRole := func(name string, n int) string {
		rules := make([]map[string][]string, n)
		for i := range rules {
			rules[i] = map[string][]string{"verbs": {"get"}, "apiGroups": {""}, "resources": {"configmaps"}, "resourceNames": {fmt.Sprintf("n%d", i)}}
		}
		b, _ := json.Marshal(map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
			"metadata": map[string]any{"name": name}, "rules": rules})
		return string(b)
	}
	const crs = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
	registerAttacks(attack{finding: "review:B6b", name: "RBAC beyond the workspace quota is refused on every write path",
		before: func(e *attackEnv, vars map[string]string) error {
			vars["over"] = bigRole("over-"+vars["n"], 20001)
			vars["small"] = bigRole("grow-"+vars["n"], 1)
			vars["grown"] = bigRole("grow-"+vars["n"], 20001)
			return nil
		},
		steps: []step{
			{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + crs, body: "{over}", want: http.StatusForbidden, has: "exceeded quota"},
			{as: "bob", method: http.MethodPost, path: "/clusters/{bobID}" + crs + "?dryRun=All", body: "{over}", want: http.StatusForbidden, has: "exceeded quota"},
			{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + crs + "/over-{n}?fieldManager=x", ctype: "application/apply-patch+yaml", body: "{over}", want: http.StatusForbidden, has: "exceeded quota"},
			{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + crs, body: "{small}", want: http.StatusCreated},
			{as: "bob", method: http.MethodPut, path: "/clusters/{bobHome}" + crs + "/grow-{n}", body: "{grown}", want: http.StatusForbidden, has: "exceeded quota"},
			{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + crs + "/grow-{n}?fieldManager=x&force=true", ctype: "application/apply-patch+yaml", body: "{grown}", want: http.StatusForbidden, has: "exceeded quota"},
			{as: "alice", method: http.MethodGet, path: "/api/whoami", want: http.StatusOK},
		},
		after: func(e *attackEnv, vars map[string]string) error {
			if err := e.wantAs(http.StatusNotFound, "bob", http.MethodGet, "/clusters/{bobHome}"+crs+"/over-{n}", "", vars); err != nil {
				return err
			}
			return e.wantAs(http.StatusOK, "bob", http.MethodDelete, "/clusters/{bobHome}"+crs+"/grow-{n}", "", vars)
		}})
}
