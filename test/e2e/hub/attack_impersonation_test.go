package hub

import (
	"fmt"
	"net/http"
	"strings"
)

// Impersonation (issue 11, findings 1, 3 and 7, and the "decisions and
// caches" class). bob is admin of his home, so workspace RBAC lets him
// impersonate there with every impersonation verb. Each row first makes
// an impersonated request in his home, which primes upstream's decision
// caches (about 10 s), then repeats the identical request elsewhere at
// once: in alice's home by path and by id, in root (no prefix) and across
// /clusters/*. The defence: an impersonated identity is confined to the
// workspace where the impersonation was allowed, and hub identities
// cannot be impersonated at all.

const (
	impSecretsPath = "/api/v1/namespaces/default/secrets"
	impRBPath      = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
	// impRB would make bob admin of the workspace it is created in.
	impRB = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"rb-{n}"},` +
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"admin"},` +
		`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"bob"}]}`
	impSecret = `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s-{n}"},"stringData":{"k":"alice-secret-{n}"}}`
	// impSAEdit lets alice's default service account edit her home, so
	// that acting as it there would read her Secrets.
	impSAEdit = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"sa-{n}"},` +
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},` +
		`"subjects":[{"kind":"ServiceAccount","name":"default","namespace":"default"}]}`
	impSSR = `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
	// impDenied is how the impersonation filter refuses bob.
	impDenied  = `User \"bob\" cannot impersonate`
	impHubOnly = "needs a hub administrator"
)

// impForm is one way of naming whom to impersonate; each picks another
// impersonation mode upstream (user-info, serviceaccount, legacy).
type impForm struct {
	name   string
	header map[string]string
}

var impForms = []impForm{
	{"user (impersonate:user-info)", map[string]string{"Impersonate-User": "alice"}},
	{"user and group (impersonate:user-info, groups)", map[string]string{"Impersonate-User": "alice", "Impersonate-Group": "devs"}},
	{"user and uid (impersonate:user-info, uids)", map[string]string{"Impersonate-User": "alice", "Impersonate-Uid": "alice-uid"}},
	{"user and extra (impersonate:user-info, userextras)", map[string]string{"Impersonate-User": "alice", "Impersonate-Extra-Example.com%2Fteam": "a"}},
	{"service account (impersonate:serviceaccount)", map[string]string{"Impersonate-User": "system:serviceaccount:default:default"}},
}

// aliceSecretAndSA gives alice a Secret in her home and lets her default
// service account edit there.
func aliceSecretAndSA(e *attackEnv, vars map[string]string) error {
	if err := e.wantAs(http.StatusCreated, "alice", http.MethodPost, "/clusters/{aliceHome}"+impSecretsPath, impSecret, vars); err != nil {
		return err
	}
	return e.wantAs(http.StatusCreated, "alice", http.MethodPost, "/clusters/{aliceHome}"+impRBPath, impSAEdit, vars)
}

// bobStaysOut checks that no impersonated write made bob admin of alice's
// home and that her Secret is still hers alone.
func bobStaysOut(e *attackEnv, vars map[string]string) error {
	if err := e.wantAs(http.StatusNotFound, "alice", http.MethodGet, "/clusters/{aliceHome}"+impRBPath+"/rb-{n}", "", vars); err != nil {
		return fmt.Errorf("the impersonated RoleBinding exists: %w", err)
	}
	return e.wantAs(http.StatusForbidden, "bob", http.MethodGet, "/clusters/{aliceHome}"+impSecretsPath, "", vars)
}

// crossWorkspaceRow primes the caches with one impersonation form in bob's
// home and repeats the identical read and write in alice's home, by path
// and by id, and in root.
func crossWorkspaceRow(f impForm) attack {
	var steps []step
	for _, ws := range []string{"/clusters/{bobHome}", "/clusters/{aliceHome}", "/clusters/{aliceID}", ""} {
		want, has := http.StatusForbidden, impDenied
		if ws == "/clusters/{bobHome}" {
			// Allowed in bob's home, where the identity has no rights:
			// this is what primes the caches.
			has = "cannot list resource"
		}
		steps = append(steps,
			step{as: "bob", method: http.MethodGet, path: ws + impSecretsPath, header: f.header, want: want, has: has, hasNot: "alice-secret"},
			step{as: "bob", method: http.MethodGet, path: ws + impSecretsPath + "/s-{n}", header: f.header, want: want, hasNot: "alice-secret"},
		)
		if ws != "/clusters/{bobHome}" {
			steps = append(steps, step{as: "bob", method: http.MethodPost, path: ws + impRBPath, body: impRB, header: f.header, want: want})
		} else {
			steps = append(steps, step{as: "bob", method: http.MethodPost, path: ws + impRBPath, body: impRB, header: f.header, want: http.StatusForbidden})
		}
	}
	// Server-side apply is update-with-create: the same write path again.
	steps = append(steps,
		step{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + impRBPath + "/rb-{n}?fieldManager=x", ctype: "application/apply-patch+yaml", body: impRB, header: f.header, want: http.StatusForbidden},
		step{as: "bob", method: http.MethodPatch, path: "/clusters/{aliceID}" + impRBPath + "/rb-{n}?fieldManager=x", ctype: "application/apply-patch+yaml", body: impRB, header: f.header, want: http.StatusForbidden},
	)
	return attack{finding: "11.1", name: "impersonation in own home is not reused in another: " + f.name,
		before: aliceSecretAndSA, steps: steps, after: bobStaysOut}
}

// hubIdentityRow impersonates a hub identity in bob's home, then repeats
// the request across /clusters/*, where only hub administrators list.
func hubIdentityRow(name, has string, header map[string]string) attack {
	steps := []step{
		{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + impSecretsPath, header: header, want: http.StatusForbidden, has: has},
		{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/v1/secrets", header: header, want: http.StatusForbidden, has: has},
		{as: "bob", method: http.MethodGet, path: "/clusters/*/api/v1/secrets", header: header, want: http.StatusForbidden, hasNot: "alice-secret"},
		{as: "bob", method: http.MethodGet, path: "/clusters/*/api/v1/configmaps", header: header, want: http.StatusForbidden},
		{as: "bob", method: http.MethodGet, path: "/clusters/{aliceID}" + impSecretsPath, header: header, want: http.StatusForbidden, hasNot: "alice-secret"},
		{as: "bob", method: http.MethodGet, path: "/api/v1/namespaces", header: header, want: http.StatusForbidden},
	}
	return attack{finding: "11.3", name: "impersonate " + name + " then list /clusters/*",
		before: func(e *attackEnv, vars map[string]string) error {
			return e.wantAs(http.StatusCreated, "alice", http.MethodPost, "/clusters/{aliceHome}"+impSecretsPath, impSecret, vars)
		}, steps: steps}
}

func init() {
	var rows []attack
	for _, f := range impForms {
		rows = append(rows, crossWorkspaceRow(f))
	}
	rows = append(rows,
		// Legacy "impersonate" alone: carol holds nothing else in bob's
		// home, so the constrained modes fail and the legacy one decides.
		attack{finding: "11.1", name: "legacy impersonate verb is confined too",
			before: func(e *attackEnv, vars map[string]string) error {
				if err := aliceSecretAndSA(e, vars); err != nil {
					return err
				}
				// Impersonation is cluster-scoped: a ClusterRole bound
				// cluster-wide in bob's home.
				role := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"imp-{n}"},"rules":[{"apiGroups":[""],"resources":["users"],"verbs":["impersonate"]}]}`
				crb := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"imp-{n}"},` +
					`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"imp-{n}"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"carol"}]}`
				if err := e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}/apis/rbac.authorization.k8s.io/v1/clusterroles", role, vars); err != nil {
					return err
				}
				return e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", crb, vars)
			},
			steps: []step{
				{as: "carol", method: http.MethodGet, path: "/clusters/{bobHome}" + impSecretsPath, header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusForbidden, has: `User \"alice\" cannot list`},
				{as: "carol", method: http.MethodGet, path: "/clusters/{aliceHome}" + impSecretsPath, header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusForbidden, hasNot: "alice-secret"},
				{as: "carol", method: http.MethodGet, path: "/clusters/{aliceID}" + impSecretsPath, header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusForbidden, hasNot: "alice-secret"},
			}},
		// Every write path, each primed in bob's home first.
		attack{finding: "11.1", name: "impersonated writes on every path stay in bob's home",
			before: aliceSecretAndSA,
			steps: func() []step {
				h := map[string]string{"Impersonate-User": "alice"}
				var steps []step
				for _, ws := range []string{"/clusters/{bobHome}", "/clusters/{aliceHome}", "/clusters/{aliceID}"} {
					steps = append(steps,
						step{as: "bob", method: http.MethodPost, path: ws + impSecretsPath + "?dryRun=All", body: strings.Replace(impSecret, "s-{n}", "dry-{n}", 1), header: h, want: http.StatusForbidden},
						step{as: "bob", method: http.MethodPut, path: ws + impSecretsPath + "/s-{n}", body: strings.Replace(impSecret, "alice-secret", "bob-was-here", 1), header: h, want: http.StatusForbidden},
						step{as: "bob", method: http.MethodPatch, path: ws + impSecretsPath + "/s-{n}", body: `{"stringData":{"k":"bob-was-here"}}`, header: h, want: http.StatusForbidden},
						step{as: "bob", method: http.MethodPatch, path: ws + impSecretsPath + "/s-{n}?fieldManager=x", ctype: "application/apply-patch+yaml",
							body: strings.Replace(impSecret, "alice-secret", "bob-was-here", 1), header: h, want: http.StatusForbidden},
						step{as: "bob", method: http.MethodDelete, path: ws + impSecretsPath + "/s-{n}", header: h, want: http.StatusForbidden},
						step{as: "bob", method: http.MethodDelete, path: ws + impSecretsPath, header: h, want: http.StatusForbidden},
					)
				}
				return steps
			}(),
			after: func(e *attackEnv, vars map[string]string) error {
				code, body := e.as("alice", http.MethodGet, "/clusters/{aliceHome}"+impSecretsPath+"/s-{n}", "", vars)
				if code != http.StatusOK || strings.Contains(body, "bob-was-here") {
					return fmt.Errorf("alice's Secret changed: %d %s", code, body)
				}
				return bobStaysOut(e, vars)
			}},
		// The confinement extra is the hub's: a client cannot choose it.
		attack{finding: "11.1", name: "impersonate alice's service account with extra wharf.dev/cluster of her home",
			before: aliceSecretAndSA,
			steps: func() []step {
				h := map[string]string{"Impersonate-User": "system:serviceaccount:default:default", "Impersonate-Extra-Wharf.dev%2Fcluster": "{aliceID}"}
				return []step{
					{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + impSecretsPath, header: h, want: http.StatusForbidden, has: "confined", hasNot: "alice-secret"},
					{as: "bob", method: http.MethodGet, path: "/clusters/{aliceID}" + impSecretsPath, header: h, want: http.StatusForbidden, hasNot: "alice-secret"},
					{as: "bob", method: http.MethodGet, path: "/clusters/{aliceHome}" + impSecretsPath, header: h, want: http.StatusForbidden, hasNot: "alice-secret"},
					// Its own workspace as the value changes nothing either.
					{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + impSecretsPath, want: http.StatusForbidden,
						header: map[string]string{"Impersonate-User": "alice", "Impersonate-Extra-Wharf.dev%2Fcluster": "{bobID}"}},
					{as: "bob", method: http.MethodGet, path: "/clusters/*/api/v1/secrets", header: h, want: http.StatusForbidden, hasNot: "alice-secret"},
					// Other hub-owned extras are refused as well.
					{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + impSecretsPath, want: http.StatusForbidden, has: "asserted by the hub only",
						header: map[string]string{"Impersonate-User": "alice", "Impersonate-Extra-Wharf.dev%2Fhome-workspace": "{aliceHome}"}},
				}
			}(), after: bobStaysOut},
		// An allowed impersonation still acts in bob's home alone.
		attack{finding: "11.1", name: "impersonated identity with rights in bob's home cannot use them elsewhere",
			before: func(e *attackEnv, vars map[string]string) error {
				if err := aliceSecretAndSA(e, vars); err != nil {
					return err
				}
				// bob makes alice admin of his home: the impersonation
				// then reads there, and must still read nowhere else.
				rb := strings.Replace(impRB, `"name":"bob"`, `"name":"alice"`, 1)
				rb = strings.Replace(rb, `"rb-{n}"`, `"alice-{n}"`, 1)
				return e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}"+impRBPath, rb, vars)
			},
			steps: []step{
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + impSecretsPath, header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusOK},
				{as: "bob", method: http.MethodGet, path: "/clusters/{aliceHome}" + impSecretsPath, header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusForbidden, hasNot: "alice-secret"},
				{as: "bob", method: http.MethodGet, path: "/clusters/{aliceID}" + impSecretsPath, header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusForbidden, hasNot: "alice-secret"},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + impRBPath, body: impRB, header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusCreated},
				{as: "bob", method: http.MethodPost, path: "/clusters/{aliceHome}" + impRBPath, body: impRB, header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusForbidden},
				{as: "bob", method: http.MethodGet, path: "/clusters/*/api/v1/secrets", header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusForbidden, hasNot: "alice-secret"},
			},
			after: bobStaysOut},
		hubIdentityRow("system:admin", impHubOnly, map[string]string{"Impersonate-User": "system:admin"}),
		hubIdentityRow("provider system:wharf:provider:example", impHubOnly, map[string]string{"Impersonate-User": "system:wharf:provider:example"}),
		// An administrator's name is impersonated as any other name
		// (review 5, #7): the identity is confined to bob's home, where
		// the name holds nothing, and is no hub administrator.
		hubIdentityRow("--admin-user hubadmin", `User \"hubadmin\" cannot list`, map[string]string{"Impersonate-User": "hubadmin"}),
		hubIdentityRow("group system:masters", "system:masters", map[string]string{"Impersonate-User": "bob", "Impersonate-Group": "system:masters"}),
		hubIdentityRow("a node (impersonate:arbitrary-node)", impHubOnly, map[string]string{"Impersonate-User": "system:node:n1"}),
		hubIdentityRow("a workspace's service-account group of alice's home", impHubOnly, map[string]string{"Impersonate-User": "bob", "Impersonate-Group": "system:cluster:{aliceID}"}),
		// The chain of finding 3 as the attacker runs it: whatever the
		// answer in his home, the wildcard list right after must fail.
		attack{finding: "11.3", name: "impersonate hubadmin in own home, then /clusters/* within the cache lifetime",
			before: func(e *attackEnv, vars map[string]string) error {
				return e.wantAs(http.StatusCreated, "alice", http.MethodPost, "/clusters/{aliceHome}"+impSecretsPath, impSecret, vars)
			},
			steps: []step{
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/v1/secrets", header: map[string]string{"Impersonate-User": "hubadmin"}},
				{as: "bob", method: http.MethodGet, path: "/clusters/*/api/v1/secrets", header: map[string]string{"Impersonate-User": "hubadmin"}, want: http.StatusForbidden, hasNot: "alice-secret"},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/v1/secrets", header: map[string]string{"Impersonate-User": "system:wharf:provider:example"}},
				{as: "bob", method: http.MethodGet, path: "/clusters/*/api/v1/secrets", header: map[string]string{"Impersonate-User": "system:wharf:provider:example"}, want: http.StatusForbidden, hasNot: "alice-secret"},
			}},
		// Four groups or more make upstream ask for "*" first.
		attack{finding: "11.3", name: "impersonate many groups at once, one of them a provider's",
			steps: []step{{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + impSecretsPath, want: http.StatusForbidden, has: impHubOnly,
				header:    map[string]string{"Impersonate-User": "bob"},
				addHeader: http.Header{"Impersonate-Group": {"a", "b", "c", "system:wharf:providers"}},
			}}},
		// Finding 7: what the impersonated identity learns about itself.
		attack{finding: "11.7", name: "whoami under impersonation tells nothing of the impersonated person",
			steps: []step{
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/whoami", header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusOK, has: `"user":"alice"`, hasNot: "{aliceHome}"},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/whoami", header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusOK, hasNot: "{aliceID}"},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/whoami", header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusOK, has: `"wharf.dev/cluster":["{bobID}"]`},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/whoami", header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusOK, hasNot: `"home"`},
				{as: "bob", method: http.MethodGet, path: "/clusters/{aliceHome}/api/whoami", header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusForbidden, hasNot: "{aliceID}"},
			}},
		attack{finding: "11.7", name: "SelfSubjectReview under impersonation tells nothing of the impersonated person",
			steps: []step{
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/apis/authentication.k8s.io/v1/selfsubjectreviews", body: impSSR, header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusCreated, has: `"username":"alice"`, hasNot: "{aliceHome}"},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/apis/authentication.k8s.io/v1/selfsubjectreviews", body: impSSR, header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusCreated, hasNot: "{aliceID}"},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/apis/authentication.k8s.io/v1/selfsubjectreviews", body: impSSR, header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusCreated, hasNot: "wharf.dev/home-"},
				{as: "bob", method: http.MethodPost, path: "/clusters/{aliceID}/apis/authentication.k8s.io/v1/selfsubjectreviews", body: impSSR, header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusForbidden, hasNot: "{aliceHome}"},
				// Without impersonation alice still sees her home.
				{as: "alice", method: http.MethodPost, path: "/clusters/{aliceHome}/apis/authentication.k8s.io/v1/selfsubjectreviews", body: impSSR, want: http.StatusCreated, has: "{aliceHome}"},
			}},
		// The provider routes do not impersonate: the provider sees bob.
		attack{finding: "11.1", name: "backend proxy ignores Impersonate-* headers",
			steps: []step{
				{as: "bob", method: http.MethodGet, path: "/services/providers/example/whoami", want: http.StatusOK, has: `"User":"bob"`, hasNot: `"alice`,
					header: map[string]string{"X-Wharf-Workspace": "{bobHome}", "Impersonate-User": "alice", "Impersonate-Group": "system:masters"}},
				{as: "bob", method: http.MethodGet, path: "/services/providers/example/whoami", want: http.StatusForbidden, hasNot: `"alice`,
					header: map[string]string{"X-Wharf-Workspace": "{aliceHome}", "Impersonate-User": "alice"}},
			}},
	)
	registerAttacks(rows...)
}
