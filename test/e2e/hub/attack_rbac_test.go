package hub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Finding 5 of issue 11 and the rest of its class; findings 6 and 8 (same
// area) are in attack_rbac_paths_test.go and attack_rbac_namespaces_test.go.
//
// 11.5: escalation checks follow upstream exactly. bob holds view in a
// workspace of alice's, plus write access to the RBAC resources; every write
// path (merge, JSON and apply patches, PUT, dry run, create through
// server-side apply) that would let him hold more is refused, while the
// GC-only changes upstream exempts still pass.

const rbacAPI = "/apis/rbac.authorization.k8s.io/v1"

// bobViewWorkspace creates {W} = {aliceHome}:esc-{n}, owned by alice, with
// bob bound to view and to write (not escalate or bind) on the four RBAC
// resources, plus carol bound to admin and a Role bob lacks, and waits until
// the bindings are in force. It sets {W} and {WID}.
func bobViewWorkspace(e *attackEnv, vars map[string]string) error {
	name := "esc-" + vars["n"]
	if err := e.wantAs(http.StatusCreated, "alice", http.MethodPost, "/clusters/{aliceHome}/apis/tenancy.wharf.dev/v1alpha1/workspaces",
		`{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"`+name+`"}}`, vars); err != nil {
		return err
	}
	vars["W"] = vars["aliceHome"] + ":" + name
	code, body := e.as("alice", http.MethodGet, "/clusters/{aliceHome}/apis/tenancy.wharf.dev/v1alpha1/workspaces/"+name, "", vars)
	var ws struct {
		Status struct{ Cluster string } `json:"status"`
	}
	if err := json.Unmarshal([]byte(body), &ws); code != http.StatusOK || err != nil || ws.Status.Cluster == "" {
		return fmt.Errorf("reading workspace %s: %d %v %s", name, code, err, body)
	}
	vars["WID"] = ws.Status.Cluster
	writes := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"rbac-writer"},"rules":[
		{"apiGroups":["rbac.authorization.k8s.io"],"resources":["clusterroles","clusterrolebindings","roles","rolebindings"],
		 "verbs":["get","list","watch","create","update","patch"]}]}`
	objs := []struct{ path, body string }{
		{rbacAPI + "/clusterroles", writes},
		{rbacAPI + "/clusterrolebindings", crb("bob-view", "view", "bob")},
		{rbacAPI + "/clusterrolebindings", crb("bob-rbac-writer", "rbac-writer", "bob")},
		{rbacAPI + "/clusterrolebindings", crb("carol-admin", "admin", "carol")},
		{rbacAPI + "/namespaces/default/roles", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"secret-reader"},
			"rules":[{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}]}`},
	}
	for _, o := range objs {
		if err := e.wantAs(http.StatusCreated, "alice", http.MethodPost, "/clusters/{W}"+o.path, o.body, vars); err != nil {
			return err
		}
	}
	// Bindings take effect when their watch event reaches the RBAC index.
	return waitFor(30*time.Second, func() error {
		if err := e.wantAs(http.StatusOK, "bob", http.MethodGet, "/clusters/{W}"+rbacAPI+"/clusterroles/rbac-writer", "", vars); err != nil {
			return err
		}
		return e.wantAs(http.StatusOK, "bob", http.MethodGet, "/clusters/{W}/api/v1/namespaces/default/configmaps", "", vars)
	})
}

func crb(name, role, user string) string {
	return `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"` + name + `"},
		"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"` + role + `"},
		"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"` + user + `"}]}`
}

// bobStillView is the postcondition of every escalation row: bob reads no
// Secret in {W} and may not create ConfigMaps there.
func bobStillView(e *attackEnv, vars map[string]string) error {
	if err := e.wantAs(http.StatusForbidden, "bob", http.MethodGet, "/clusters/{W}/api/v1/namespaces/default/secrets", "", vars); err != nil {
		return fmt.Errorf("bob escalated: %w", err)
	}
	return e.wantAs(http.StatusForbidden, "bob", http.MethodPost, "/clusters/{W}/api/v1/namespaces/default/configmaps",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"escalated"}}`, vars)
}

const (
	notHeld        = "attempting to grant RBAC permissions not currently held"
	aggregation    = "must have cluster-admin privileges to use the aggregationRule"
	applyCT        = "application/apply-patch+yaml"
	jsonPatchCT    = "application/json-patch+json"
	strategicCT    = "application/strategic-merge-patch+json"
	toViewLabel    = `{"metadata":{"labels":{"rbac.authorization.k8s.io/aggregate-to-view":"true"}}}`
	adminPartPath  = rbacAPI + "/clusterroles/wharf:aggregate-to-admin"
	adminPartRules = `[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]},{"nonResourceURLs":["*"],"verbs":["*"]}]`
)

func init() {
	// Each escalation variant on the powerful role that feeds admin, by
	// path and by id.
	var labelSteps []step
	for _, ws := range []string{"{W}", "{WID}"} {
		p := "/clusters/" + ws + adminPartPath
		labelSteps = append(labelSteps,
			step{as: "bob", method: http.MethodPatch, path: p, body: toViewLabel, want: http.StatusForbidden, has: notHeld},
			step{as: "bob", method: http.MethodPatch, path: p + "?dryRun=All", body: toViewLabel, want: http.StatusForbidden, has: notHeld},
			step{as: "bob", method: http.MethodPatch, path: p, ctype: strategicCT, body: toViewLabel, want: http.StatusForbidden, has: notHeld},
			step{as: "bob", method: http.MethodPatch, path: p, ctype: jsonPatchCT,
				body: `[{"op":"add","path":"/metadata/labels/rbac.authorization.k8s.io~1aggregate-to-view","value":"true"}]`, want: http.StatusForbidden, has: notHeld},
			step{as: "bob", method: http.MethodPatch, path: p + "?fieldManager=bob&force=true", ctype: applyCT,
				body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"wharf:aggregate-to-admin","labels":{"rbac.authorization.k8s.io/aggregate-to-view":"true"}}}`,
				want: http.StatusForbidden, has: notHeld},
			// PUT with the role's own rules and one more label, without a
			// resourceVersion (an unconditional update).
			step{as: "bob", method: http.MethodPut, path: p,
				body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"wharf:aggregate-to-admin","labels":{
					"rbac.authorization.k8s.io/aggregate-to-admin":"true","rbac.authorization.k8s.io/aggregate-to-view":"true"}},"rules":` + adminPartRules + `}`,
				want: http.StatusForbidden, has: notHeld},
		)
	}
	labelSteps = append(labelSteps,
		// Taking a label away is a change too: without it admin gathers
		// nothing, and the workspace's owner loses her rights.
		step{as: "bob", method: http.MethodPatch, path: "/clusters/{W}" + adminPartPath, ctype: jsonPatchCT,
			body: `[{"op":"remove","path":"/metadata/labels/rbac.authorization.k8s.io~1aggregate-to-admin"}]`, want: http.StatusForbidden, has: notHeld},
		step{as: "bob", method: http.MethodPatch, path: "/clusters/{W}" + adminPartPath, body: `{"metadata":{"labels":null}}`, want: http.StatusForbidden, has: notHeld},
		step{as: "alice", method: http.MethodGet, path: "/clusters/{W}" + adminPartPath, want: http.StatusOK, hasNot: "aggregate-to-view"},
		step{as: "alice", method: http.MethodGet, path: "/clusters/{W}/api/v1/namespaces/default/secrets", want: http.StatusOK})

	registerAttacks(
		attack{finding: "11.5", name: "label-only change adds a powerful role to view (patch, dry run, SSA, PUT; by path and id)",
			before: bobViewWorkspace, steps: labelSteps, after: bobStillView},
		attack{finding: "11.5", name: "aggregated roles: relabel one, change its selectors, create one",
			before: bobViewWorkspace,
			steps: []step{
				// admin is aggregated: labelling it into view would hand
				// view everything admin gathers.
				{as: "bob", method: http.MethodPatch, path: "/clusters/{W}" + rbacAPI + "/clusterroles/admin", body: toViewLabel, want: http.StatusForbidden, has: aggregation},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{W}" + rbacAPI + "/clusterroles/admin?dryRun=All", body: toViewLabel, want: http.StatusForbidden, has: aggregation},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{W}" + rbacAPI + "/clusterroles/view",
					body: `{"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"rbac.authorization.k8s.io/aggregate-to-admin":"true"}}]}}`,
					want: http.StatusForbidden, has: aggregation},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{W}" + rbacAPI + "/clusterroles/view?fieldManager=bob&force=true", ctype: applyCT,
					body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"view"},"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"rbac.authorization.k8s.io/aggregate-to-admin":"true"}}]}}`,
					want: http.StatusForbidden, has: aggregation},
				{as: "bob", method: http.MethodPost, path: "/clusters/{W}" + rbacAPI + "/clusterroles",
					body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"gather"},"aggregationRule":{"clusterRoleSelectors":[{}]}}`,
					want: http.StatusForbidden, has: aggregation},
				// Nor may a role view already gathers carry more.
				{as: "bob", method: http.MethodPatch, path: "/clusters/{W}" + rbacAPI + "/clusterroles/wharf:aggregate-to-view", ctype: jsonPatchCT,
					body: `[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}}]`, want: http.StatusForbidden, has: notHeld},
				// A new role labelled into view may carry only what bob holds.
				{as: "bob", method: http.MethodPatch, path: "/clusters/{W}" + rbacAPI + "/clusterroles/into-view?fieldManager=bob", ctype: applyCT,
					body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"into-view","labels":{"rbac.authorization.k8s.io/aggregate-to-view":"true"}},
						"rules":[{"apiGroups":[""],"resources":["secrets"],"verbs":["get","list"]}]}`,
					want: http.StatusForbidden, has: notHeld},
				{as: "bob", method: http.MethodPost, path: "/clusters/{W}" + rbacAPI + "/clusterroles?dryRun=All",
					body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"into-view","labels":{"rbac.authorization.k8s.io/aggregate-to-view":"true"}},
						"rules":[{"apiGroups":[""],"resources":["secrets"],"verbs":["get","list"]}]}`,
					want: http.StatusForbidden, has: notHeld},
			},
			after: bobStillView},
		attack{finding: "11.5", name: "what upstream allows still works: GC-only changes, relabelling what one holds",
			before: bobViewWorkspace,
			steps: []step{
				{as: "bob", method: http.MethodPatch, path: "/clusters/{W}" + adminPartPath, body: `{"metadata":{"finalizers":["example.com/hold"]}}`, want: http.StatusOK},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{W}" + adminPartPath, body: `{"metadata":{"finalizers":null}}`, want: http.StatusOK},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{W}" + rbacAPI + "/clusterroles/rbac-writer", body: `{"metadata":{"labels":{"team":"x"}}}`, want: http.StatusOK},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{W}" + rbacAPI + "/clusterroles/mine?fieldManager=bob", ctype: applyCT,
					body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"mine"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]}`,
					want: http.StatusCreated},
			}},
		attack{finding: "11.5", name: "Roles: label-only change, SSA create, dry run",
			before: bobViewWorkspace,
			steps: []step{
				{as: "bob", method: http.MethodPatch, path: "/clusters/{W}" + rbacAPI + "/namespaces/default/roles/secret-reader", body: `{"metadata":{"labels":{"a":"b"}}}`,
					want: http.StatusForbidden, has: notHeld},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{WID}" + rbacAPI + "/namespaces/default/roles/secret-reader?dryRun=All", body: `{"metadata":{"labels":{"a":"b"}}}`,
					want: http.StatusForbidden, has: notHeld},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{W}" + rbacAPI + "/namespaces/default/roles/grab?fieldManager=bob", ctype: applyCT,
					body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"grab"},"rules":[{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}]}`,
					want: http.StatusForbidden, has: notHeld},
			},
			after: bobStillView},
		attack{finding: "11.5", name: "bindings: bind check on label-only change, subjects, SSA create, dry run",
			before: bobViewWorkspace,
			steps: []step{
				{as: "bob", method: http.MethodPatch, path: "/clusters/{W}" + rbacAPI + "/clusterrolebindings/carol-admin", body: `{"metadata":{"labels":{"a":"b"}}}`,
					want: http.StatusForbidden, has: notHeld},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{WID}" + rbacAPI + "/clusterrolebindings/carol-admin?dryRun=All", ctype: jsonPatchCT,
					body: `[{"op":"add","path":"/subjects/-","value":{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"bob"}}]`,
					want: http.StatusForbidden, has: notHeld},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{W}" + rbacAPI + "/clusterrolebindings/grab?fieldManager=bob", ctype: applyCT,
					body: crb("grab", "admin", "bob"), want: http.StatusForbidden, has: notHeld},
				{as: "bob", method: http.MethodPost, path: "/clusters/{W}" + rbacAPI + "/clusterrolebindings?dryRun=All", body: crb("grab", "admin", "bob"),
					want: http.StatusForbidden, has: notHeld},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{W}" + rbacAPI + "/namespaces/default/rolebindings/grab?fieldManager=bob", ctype: applyCT,
					body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"grab"},
						"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"secret-reader"},
						"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"bob"}]}`,
					want: http.StatusForbidden, has: notHeld},
				// Binding what bob holds is his to share.
				{as: "bob", method: http.MethodPost, path: "/clusters/{W}" + rbacAPI + "/clusterrolebindings", body: crb("share-view", "view", "carol"), want: http.StatusCreated},
			},
			after: bobStillView},
	)
}
