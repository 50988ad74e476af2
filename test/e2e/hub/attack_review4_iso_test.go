package hub

import (
	"fmt"
	"net/http"
)

// Issue 24, fourth outside review: the isolation attempts 16-20, which
// held, as rows of the attack table (bob attacks, alice's home is the
// workspace he may not see). 16: the review's paths and methods beyond
// the oracle table's (attack_oracle_test.go), by path and by id, answered
// identically for alice's home and a missing workspace; 17: a flood's
// answers alike for both; 18: impersonation refused or confined to his
// home; 19: a service-account token refused outside its workspace; 20:
// every hub-wide write refused.

// review4Probes are the review's requests (its isodiff.py) that the
// oracle table's probe lists do not already send, and that a caller
// without access is denied (a 403 Status); the rest of its ~38 paths
// follow the same routes as these or the table's.
var review4Probes = []oracleProbe{
	{name: "watch with timeoutSeconds", method: http.MethodGet, path: "/clusters/{T}/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1"},
	{name: "OPTIONS", method: http.MethodOptions, path: "/clusters/{T}/api/v1/configmaps"},
	{name: "a child of it", method: http.MethodGet, path: "/clusters/{T}:child/api/v1/configmaps"},
	{name: "CRDs", method: http.MethodGet, path: "/clusters/{T}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"},
	{name: "usage", method: http.MethodGet, path: "/clusters/{T}/api/usage"},
	{name: "readyz/etcd", method: http.MethodGet, path: "/clusters/{T}/readyz/etcd"},
	{name: "token POST", method: http.MethodPost, path: "/clusters/{T}/api/v1/namespaces/default/serviceaccounts/default/token", body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`},
	{name: "the workspace itself", method: http.MethodGet, path: "/clusters/{T}"},
	{name: "provider root via X-Wharf-Workspace", method: http.MethodGet, path: "/services/providers/example/", header: map[string]string{"X-Wharf-Workspace": "{T}"}},
}

// review4Other are the review's requests answered otherwise than 403,
// the same for any workspace: HEAD (a 403 without a body), and pages and
// files that do not depend on the workspace named.
var review4Other = []oracleProbe{
	{name: "HEAD", method: http.MethodHead, path: "/clusters/{T}/api/v1/configmaps"},
	{name: "provider UI file via X-Wharf-Workspace", method: http.MethodGet, path: "/ui/providers/example/main.js", header: map[string]string{"X-Wharf-Workspace": "{T}"}},
	{name: "catalog page", method: http.MethodGet, path: "/ui/catalog?ws={T}"},
	{name: "portal", method: http.MethodGet, path: "/ui/?ws={T}"},
}

// r4imp is bob's request with the impersonation headers h (name, value,
// ...).
func r4imp(method, path, body string, want int, h ...string) step {
	hdr := map[string]string{}
	for i := 0; i+1 < len(h); i += 2 {
		hdr[h[i]] = h[i+1]
	}
	return step{as: "bob", method: method, path: path, body: body, header: hdr, want: want}
}

func init() {
	cms := "/api/v1/namespaces/default/configmaps"
	registerAttacks(
		attack{finding: "r24d:16", name: "the fourth review's paths and methods do not tell an inaccessible workspace from a missing one",
			before: missingID, after: func(e *attackEnv, vars map[string]string) error {
				if err := sameDenial("bob", review4Probes)(e, vars); err != nil {
					return err
				}
				for _, pair := range oraclePairs[:2] {
					for _, p := range review4Other {
						a, b := probeAnswer(e, "bob", p, pair[0], vars), probeAnswer(e, "bob", p, pair[1], vars)
						if a.String() != b.String() {
							return fmt.Errorf("%s: %s answers\n%s\nbut %s answers\n%s", p.name, expand(pair[0], vars), a, expand(pair[1], vars), b)
						}
					}
				}
				return nil
			}},
		// 17, the share of 429s alike for both, is r24:3
		// (TestAttackLimitsReviewFair), which floods both at a nearly
		// used budget.
		attack{finding: "r24d:18", name: "impersonation is refused outside bob's home, and confined to it inside",
			steps: []step{
				// In his home he may impersonate anyone: the identity keeps
				// his workspace and sees none of alice's.
				r4imp(http.MethodGet, "/clusters/{bobHome}/api/whoami", "", http.StatusOK, "Impersonate-User", "alice"),
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/apis/authentication.k8s.io/v1/selfsubjectreviews", body: ssr,
					header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusCreated, has: `"username":"alice"`, hasNot: "{aliceID}"},
				r4imp(http.MethodGet, "/clusters/{aliceHome}"+cms, "", http.StatusForbidden, "Impersonate-User", "alice"),
				r4imp(http.MethodGet, "/clusters/{bobHome}"+cms, "", http.StatusForbidden, "Impersonate-User", "hubadmin"),
				r4imp(http.MethodGet, "/clusters/root"+cms, "", http.StatusForbidden, "Impersonate-User", "hubadmin"),
				r4imp(http.MethodGet, "/clusters/root"+cms, "", http.StatusForbidden, "Impersonate-User", "HubAdmin"),
				r4imp(http.MethodGet, "/clusters/root"+cms, "", http.StatusForbidden, "Impersonate-User", "hubadmin "),
				r4imp(http.MethodGet, "/clusters/{bobHome}/api/v1/configmaps", "", http.StatusForbidden, "Impersonate-User", "x", "Impersonate-Group", "system:masters"),
				r4imp(http.MethodGet, "/clusters/{aliceHome}/api/v1/configmaps", "", http.StatusForbidden, "Impersonate-User", "x", "Impersonate-Group", "system:cluster:{aliceID}"),
				r4imp(http.MethodGet, "/clusters/{aliceHome}/api/v1/configmaps", "", http.StatusForbidden, "Impersonate-User", "system:serviceaccount:default:default"),
				// A service account of his home has no RBAC there: confined.
				r4imp(http.MethodGet, "/clusters/{bobHome}/api/v1/configmaps", "", http.StatusForbidden, "Impersonate-User", "system:serviceaccount:default:default"),
				r4imp(http.MethodGet, "/clusters/{aliceHome}/api/v1/configmaps", "", http.StatusForbidden, "Impersonate-User", "alice", "Impersonate-Extra-wharf.dev%2Fcluster", "{aliceID}"),
				r4imp(http.MethodGet, "/clusters/{aliceHome}/api/v1/configmaps", "", http.StatusForbidden, "Impersonate-User", "alice", "Impersonate-Extra-wharf.dev%2Fhome-workspace", "{aliceHome}"),
				r4imp(http.MethodGet, "/clusters/{bobHome}/api/v1/configmaps", "", http.StatusForbidden, "Impersonate-User", "system:wharf:provider:example"),
				r4imp(http.MethodGet, "/metrics", "", http.StatusForbidden, "Impersonate-User", "x", "Impersonate-Group", "system:monitoring"),
				r4imp(http.MethodGet, "/clusters/root"+cms, "", http.StatusForbidden, "Impersonate-User", "x", "Impersonate-Group", "ops"),
				r4imp(http.MethodGet, "/clusters/*/api/v1/configmaps", "", http.StatusForbidden, "Impersonate-User", "alice"),
				r4imp(http.MethodGet, "/api/whoami", "", http.StatusForbidden, "Impersonate-User", "alice"),
				r4imp(http.MethodGet, "/services/providers/example/whoami", "", http.StatusForbidden, "Impersonate-User", "alice", "X-Wharf-Workspace", "{aliceHome}"),
				r4imp(http.MethodGet, "/auth/session", "", http.StatusUnauthorized, "Impersonate-User", "alice"),
				// token-login ignores impersonation: bob's own kubeconfig.
				{as: "bob", method: http.MethodPost, path: "/auth/token-login", header: map[string]string{"Impersonate-User": "alice"},
					want: http.StatusOK, has: "/clusters/{bobHome}", hasNot: "{aliceHome}"},
			}},
		attack{finding: "r24d:19", name: "a service-account token is refused outside its workspace",
			before: func(e *attackEnv, vars map[string]string) error {
				tok, err := mintSAToken(e, "r24d-{n}", nil, vars)
				vars["saAuth"] = "Bearer " + tok
				return err
			},
			steps: []step{
				{method: http.MethodGet, path: "/clusters/{bobHome}/api/whoami", header: map[string]string{"Authorization": "{saAuth}"}, want: http.StatusOK, has: "system:serviceaccount:default:r24d-{n}"},
				{method: http.MethodGet, path: "/clusters/{aliceHome}" + cms, header: map[string]string{"Authorization": "{saAuth}"}, want: http.StatusForbidden},
				{method: http.MethodGet, path: "/clusters/{aliceID}" + cms, header: map[string]string{"Authorization": "{saAuth}"}, want: http.StatusForbidden},
				{method: http.MethodGet, path: "/clusters/root" + cms, header: map[string]string{"Authorization": "{saAuth}"}, want: http.StatusForbidden},
				{method: http.MethodGet, path: "/clusters/*/api/v1/configmaps", header: map[string]string{"Authorization": "{saAuth}"}, want: http.StatusForbidden},
				{method: http.MethodGet, path: "/api/whoami", header: map[string]string{"Authorization": "{saAuth}"}, want: http.StatusForbidden},
				{method: http.MethodGet, path: "/services/providers/example/whoami", header: map[string]string{"Authorization": "{saAuth}", "X-Wharf-Workspace": "{aliceHome}"}, want: http.StatusForbidden},
			}},
		attack{finding: "r24d:20", name: "every hub-wide write is refused",
			steps: []step{
				{as: "bob", method: http.MethodPost, path: "/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions", want: http.StatusForbidden,
					body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.r24d.example.com"},"spec":{"group":"r24d.example.com","names":{"kind":"Widget","plural":"widgets"},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`},
				{as: "bob", method: http.MethodPost, path: "/clusters/root/apis/providers.wharf.dev/v1alpha1/catalogentries", want: http.StatusForbidden,
					body: `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"CatalogEntry","metadata":{"name":"r24d-evil"},"spec":{}}`},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/apis/providers.wharf.dev/v1alpha1/catalogentries", want: http.StatusForbidden,
					body: `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"CatalogEntry","metadata":{"name":"r24d-evil"},"spec":{}}`, has: "only in the root workspace"},
				{as: "bob", method: http.MethodPatch, path: "/clusters/root" + cms + "/r24d-{n}?fieldManager=x", ctype: "application/apply-patch+yaml", want: http.StatusForbidden,
					body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"r24d-{n}"}}`},
				{as: "bob", method: http.MethodPost, path: "/clusters/root/apis/apiregistration.k8s.io/v1/apiservices", want: http.StatusForbidden,
					body: `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1.r24d.example.com"},"spec":{"group":"r24d.example.com","version":"v1","groupPriorityMinimum":1000,"versionPriority":15}}`},
				// Workspace status: of his home (in root:users), and of a
				// child he made (no writable status subresource).
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + wsAPI, body: childWS("r24d-{n}"), want: http.StatusCreated},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + wsAPI + "/r24d-{n}/status", body: `{"status":{"cluster":"{aliceID}"}}`, want: http.StatusMethodNotAllowed},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + wsAPI + "/r24d-{n}", body: `{"metadata":{"annotations":{"quota.wharf.dev/max-bytes":"99999999999"}}}`,
					want: http.StatusForbidden, has: "hub administrators only"},
				// ProviderBinding status: none to write.
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/apis/providers.wharf.dev/v1alpha1/providerbindings", want: http.StatusCreated,
					body: `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"ProviderBinding","metadata":{"name":"r24d-{n}"},"spec":{"provider":"example"}}`},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}/apis/providers.wharf.dev/v1alpha1/providerbindings/r24d-{n}/status", want: http.StatusNotFound,
					body: `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"x","message":"x","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`},
				{as: "bob", method: http.MethodDelete, path: "/clusters/{bobHome}/apis/providers.wharf.dev/v1alpha1/providerbindings/r24d-{n}", want: http.StatusOK},
				{as: "bob", method: http.MethodDelete, path: "/clusters/{bobHome}" + wsAPI + "/r24d-{n}", want: http.StatusOK},
			}},
	)
}
