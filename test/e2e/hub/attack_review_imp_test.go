package hub

import (
	"fmt"
	"net/http"
	"strings"
)

// Rows of the attack review about impersonation: B1 (whoami under
// impersonation), B3 (the decision cache replayed in another workspace,
// attempts 13, 14 and 58) and the confinement bypasses of attempt 64. The
// 11.1/11.3/11.7 rows cover the other forms; these are the tester's exact
// sequences.

const revAccessAll = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"all-{n}"},` +
	`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"wharf:workspace-access"},` +
	`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"system:authenticated"}]}`

// revOwnAlice would make bob admin of whatever workspace it lands in.
const revOwnAlice = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"bob-owns-{n}"},` +
	`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"admin"},` +
	`"subjects":[{"kind":"User","name":"bob","apiGroup":"rbac.authorization.k8s.io"}]}`

const revCRBs = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"

func init() {
	asAlice := map[string]string{"Impersonate-User": "alice"}
	registerAttacks(
		// B1 as re-verified on 6353e80: bob first lets every person
		// access his home, so the impersonated identity passes the
		// workspace-access step there; whoami still lists only what the
		// confined identity reaches: bob's home.
		attack{finding: "review:B1", name: "whoami under impersonation after granting everybody access to bob's home",
			before: func(e *attackEnv, vars map[string]string) error {
				return e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}"+revCRBs, revAccessAll, vars)
			},
			steps: []step{
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/whoami", header: asAlice, want: http.StatusOK, has: `"workspaces":[{"path":"{bobHome}","cluster":"{bobID}"}]`, hasNot: "{aliceHome}"},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobID}/api/whoami", header: asAlice, want: http.StatusOK, hasNot: "{aliceID}"},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/whoami", header: map[string]string{"Impersonate-User": "carol"}, want: http.StatusOK, hasNot: "{carolHome}"},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/whoami", header: map[string]string{"Impersonate-User": "carol"}, want: http.StatusOK, hasNot: `"home"`},
				// A group alone (as the tester also tried): what the group
				// reaches elsewhere is not listed.
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/whoami", header: map[string]string{"Impersonate-User": "bob", "Impersonate-Group": "devs"}, want: http.StatusOK, hasNot: "{aliceHome}"},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/apis/authentication.k8s.io/v1/selfsubjectreviews", body: impSSR, header: asAlice, want: http.StatusCreated, hasNot: "wharf.dev/home-"},
			},
			after: func(e *attackEnv, vars map[string]string) error {
				return e.wantAs(http.StatusOK, "bob", http.MethodDelete, "/clusters/{bobHome}"+revCRBs+"/all-{n}", "", vars)
			}},
		// B3 (attempts 13, 14): prime the cache in bob's home, replay at
		// once in alice's home by path and by id.
		attack{finding: "review:B3", name: "impersonation cache replay: read alice's secrets, bind bob admin in her home",
			before: aliceObjects,
			steps: []step{
				// Primes the caches; alice may hold rights in bob's home from
				// an earlier row, so the answer there does not matter.
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + revSecrets, header: asAlice, hasNot: revLeak},
				{as: "bob", method: http.MethodGet, path: "/clusters/{aliceHome}" + revSecrets, header: asAlice, want: http.StatusForbidden, has: impDenied, hasNot: revLeak},
				{as: "bob", method: http.MethodGet, path: "/clusters/{aliceID}" + revSecrets + "/rs-{n}", header: asAlice, want: http.StatusForbidden, hasNot: revLeak},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + revCRBs, body: strings.Replace(revOwnAlice, "bob-owns-{n}", "prime-{n}", 1), header: asAlice},
				{as: "bob", method: http.MethodPost, path: "/clusters/{aliceHome}" + revCRBs, body: revOwnAlice, header: asAlice, want: http.StatusForbidden, has: impDenied},
				{as: "bob", method: http.MethodPost, path: "/clusters/{aliceID}" + revCRBs, body: revOwnAlice, header: asAlice, want: http.StatusForbidden},
				{as: "bob", method: http.MethodGet, path: "/clusters/{aliceHome}" + revSecrets + "/rs-{n}", want: http.StatusForbidden, hasNot: revLeak},
			},
			after: func(e *attackEnv, vars map[string]string) error {
				return e.wantAs(http.StatusNotFound, "alice", http.MethodGet, "/clusters/{aliceHome}"+revCRBs+"/bob-owns-{n}", "", vars)
			}},
		// B3 with the real kubectl (attempt 58): --as primes in bob's
		// home, then the same command at alice's home by path and by id.
		attack{finding: "review:58", name: "kubectl --as=alice in bob's home, then in alice's by path and by id",
			before: aliceObjects,
			after: func(e *attackEnv, vars map[string]string) error {
				// Primes the caches in bob's home (whatever it answers).
				_, _ = e.h.as("bob", vars["bobHome"], "--as=alice", "get", "secrets", "-n", "default")
				for _, ws := range []string{vars["aliceHome"], vars["aliceID"], vars["aliceHome"]} {
					out, err := e.h.as("bob", ws, "--as=alice", "get", "secrets", "-n", "default", "-o", "yaml")
					if err == nil || !strings.Contains(out, "Forbidden") || strings.Contains(out, expand("rs-{n}", vars)) {
						return fmt.Errorf("kubectl --as=alice get secrets in %s: %v\n%s", ws, err, out)
					}
				}
				out, err := e.h.as("bob", vars["aliceID"], "--as=alice", "get", "secret", expand("rs-{n}", vars), "-n", "default", "-o", "jsonpath={.data.k}")
				if err == nil || strings.Contains(out, "YWxpY2") {
					return fmt.Errorf("kubectl --as=alice get secret by id: %v\n%s", err, out)
				}
				return nil
			}},
		// Attempt 64 on 8fb14a6: ways around the confinement extra and
		// the one-identity rule.
		attack{finding: "review:64", name: "confinement bypasses: spelled-out cluster extra, two users, group without user, wildcard",
			before: aliceObjects,
			steps: func() []step {
				var steps []step
				for _, key := range []string{"Impersonate-Extra-wharf.dev%2Fcluster", "Impersonate-Extra-Wharf.Dev%2fCluster", "Impersonate-Extra-wharf%2Edev%2fcluster"} {
					h := map[string]string{"Impersonate-User": "alice", key: "{aliceID}"}
					steps = append(steps,
						step{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + revSecrets, header: h, want: http.StatusForbidden, hasNot: revLeak},
						step{as: "bob", method: http.MethodGet, path: "/clusters/{aliceHome}" + revSecrets, header: h, want: http.StatusForbidden, hasNot: revLeak},
					)
				}
				return append(steps,
					step{as: "bob", method: http.MethodGet, path: "/clusters/{aliceHome}" + revSecrets, addHeader: http.Header{"Impersonate-User": {"alice", "bob"}}, want: http.StatusForbidden, hasNot: revLeak},
					step{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + revSecrets, addHeader: http.Header{"Impersonate-User": {"bob", "alice"}}, hasNot: revLeak},
					step{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + revSecrets, header: map[string]string{"Impersonate-Group": "system:masters"}, want: http.StatusBadRequest},
					step{as: "bob", method: http.MethodGet, path: "/clusters/*/api/v1/secrets", header: asAlice, want: http.StatusForbidden, hasNot: revLeak},
					step{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + revSecrets, header: map[string]string{"Impersonate-User": "system:serviceaccount:default:default"}, want: http.StatusForbidden},
					step{as: "bob", method: http.MethodGet, path: "/clusters/{aliceHome}" + revSecrets, header: map[string]string{"Impersonate-User": "system:serviceaccount:default:default"}, want: http.StatusForbidden, hasNot: revLeak},
				)
			}()},
		// Attempts 56 and 66: a SubjectAccessReview in bob's home answers
		// truthfully that a hub administrator may act there; knowing the
		// name gives bob nothing: impersonated, the name is confined to his
		// home and no administrator (review 5, #7).
		attack{finding: "review:56", name: "SubjectAccessReview names hub administrators; impersonating one is refused",
			steps: []step{
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/apis/authorization.k8s.io/v1/subjectaccessreviews", want: http.StatusCreated, has: `"allowed":true`,
					body: `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"hubadmin","resourceAttributes":{"verb":"get","resource":"secrets","namespace":"default"}}}`},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/apis/authorization.k8s.io/v1/subjectaccessreviews", want: http.StatusCreated, has: `"allowed":false`,
					body: `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"carol","resourceAttributes":{"verb":"get","resource":"secrets","namespace":"default"}}}`},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + revSecrets, header: map[string]string{"Impersonate-User": "hubadmin"}, want: http.StatusForbidden, has: `User \"hubadmin\" cannot list`},
			}},
	)
}
