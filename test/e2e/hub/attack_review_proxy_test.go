package hub

import (
	"net/http"
	"strings"
)

// Rows of the attack review against the provider routes: the backend
// proxy (/services/providers/<name>/) and the UI proxy
// (/ui/providers/<name>/). The example provider's /whoami echoes the
// identity the hub asserted, so a forged header shows in the body.

const (
	revBackend = "/services/providers/example"
	revUI      = "/ui/providers/example"
	// revBob is the identity the hub asserts for bob in his home.
	revBob = `"User":"bob","Groups":["devs","system:authenticated"],"Tenant":"{bobHome}","Cluster":"{bobID}"`
)

func init() {
	forgery := map[string]string{
		"X-Kedge-User": "alice", "X-Kedge-Groups": "system:masters", "X-Kedge-Tenant": "{aliceHome}", "X-Kedge-Cluster": "{aliceID}",
		"X_Kedge_User": "alice", "x-kedge-user": "alice", "Connection": "X-Kedge-User, X-Kedge-Groups",
	}
	wsDenied := func(value string) step {
		return step{as: "bob", method: http.MethodGet, path: revBackend + "/whoami", header: map[string]string{"X-Wharf-Workspace": value},
			want: http.StatusForbidden, has: "workspace access not permitted", hasNot: `"identity"`}
	}
	registerAttacks(
		// [21]
		attack{finding: "review:21", name: "backend proxy: forged X-Kedge-* in every spelling and via Connection",
			steps: []step{
				{as: "bob", method: http.MethodGet, path: revBackend + "/whoami", header: forgery, want: http.StatusOK, has: revBob, hasNot: "alice"},
				// A public path gets no identity, forged or not.
				{method: http.MethodGet, path: revBackend + "/public/ping", header: forgery, want: http.StatusOK, has: `"authenticated":false`, hasNot: "alice"},
			}},
		// [22]: every value of the workspace selector that is not bob's
		// answers the same denial.
		attack{finding: "review:22", name: "backend proxy: X-Wharf-Workspace of alice by path, id, padded id, wildcard, root, child, missing",
			steps: []step{
				wsDenied("{aliceHome}"),
				wsDenied("{aliceID}"),
				wsDenied(" {aliceID} "),
				wsDenied("*"),
				wsDenied("root"),
				wsDenied("{aliceHome}:proj"),
				wsDenied("{aliceHome}:nope-{n}"),
				{as: "bob", method: http.MethodGet, path: revBackend + "/whoami", header: map[string]string{"Cookie": "__Host-wharf_workspace={aliceID}"},
					want: http.StatusForbidden, hasNot: `"identity"`},
			}},
		// [23]: the first of several selectors decides, and it is
		// checked like a single one.
		attack{finding: "review:23", name: "backend proxy: two X-Wharf-Workspace headers",
			steps: []step{
				{as: "bob", method: http.MethodGet, path: revBackend + "/whoami", addHeader: http.Header{"X-Wharf-Workspace": {"{bobHome}", "{aliceHome}"}},
					want: http.StatusOK, has: revBob, hasNot: "{aliceID}"},
				{as: "bob", method: http.MethodGet, path: revBackend + "/whoami", addHeader: http.Header{"X-Wharf-Workspace": {"{aliceHome}", "{bobHome}"}},
					want: http.StatusForbidden, hasNot: `"identity"`},
			}},
		// [24]: the replica hop is for hub replicas only; a forged
		// assertion is refused, with or without a bearer token.
		attack{finding: "review:24", name: "backend proxy: forged replica assertion, no credentials",
			steps: []step{
				{as: "bob", method: http.MethodGet, path: revBackend + "/whoami", want: http.StatusUnauthorized, hasNot: `"identity"`,
					header: map[string]string{"X-Wharf-Replica-Assertion": "eyJ1IjoiaHViYWRtaW4iLCJnIjpbInN5c3RlbTptYXN0ZXJzIl19.AAAA", "X-Wharf-Replica-Hop": "1"}},
				{method: http.MethodGet, path: revBackend + "/whoami", want: http.StatusUnauthorized, hasNot: `"identity"`,
					header: map[string]string{"X-Wharf-Replica-Assertion": "eyJ1IjoiaHViYWRtaW4ifQ.AAAA", "X-Wharf-Replica-Hop": "1", "X-Forwarded-For": "203.0.113.24"}},
				{method: http.MethodGet, path: revBackend + "/whoami", want: http.StatusUnauthorized, hasNot: `"identity"`},
			}},
		// [25]: dot segments stay inside the provider (or find nothing);
		// none reaches the hub's API, and none skips authentication by
		// starting on a public prefix.
		attack{finding: "review:25", name: "backend proxy: path traversal and odd provider names",
			steps: []step{
				{as: "bob", method: http.MethodGet, path: revBackend + "/../../api/v1/namespaces", want: http.StatusNotFound, hasNot: "NamespaceList"},
				{as: "bob", method: http.MethodGet, path: revBackend + "/%2e%2e/%2e%2e/api/v1/namespaces", want: http.StatusNotFound, hasNot: "NamespaceList"},
				{as: "bob", method: http.MethodGet, path: revBackend + "/%2e%2e/whoami", want: http.StatusOK, has: revBob},
				{as: "bob", method: http.MethodGet, path: "/services/providers//example/whoami", want: http.StatusNotFound, hasNot: `"identity"`},
				{as: "bob", method: http.MethodGet, path: "/services/providers/EXAMPLE/whoami", want: http.StatusNotFound, hasNot: `"identity"`},
				{method: http.MethodGet, path: revBackend + "/public/../whoami", want: http.StatusUnauthorized, hasNot: `"identity"`},
				{method: http.MethodGet, path: revBackend + "/public/%2e%2e/whoami", want: http.StatusUnauthorized, hasNot: `"identity"`},
				{method: http.MethodGet, path: revBackend + "/public/..%2fwhoami", want: http.StatusUnauthorized, hasNot: `"identity"`},
			}},
		// [49]: assets are public and read-only; nothing under the UI
		// prefix reaches the API or a provider's backend.
		attack{finding: "review:49", name: "UI proxy: anonymous assets, writes, hop header, traversal",
			steps: []step{
				{method: http.MethodGet, path: revUI + "/app.js", want: http.StatusOK, has: "example-provider"},
				{method: http.MethodPost, path: revUI + "/app.js", body: "{}", want: http.StatusMethodNotAllowed, has: "read-only"},
				{as: "bob", method: http.MethodPut, path: revUI + "/app.js", body: "{}", want: http.StatusMethodNotAllowed},
				{method: http.MethodGet, path: revUI + "/%2e%2e/%2e%2e/api/v1/namespaces", hasNot: "NamespaceList"},
				{as: "bob", method: http.MethodGet, path: revUI + "/../../../api/v1/namespaces", hasNot: "NamespaceList"},
				{as: "bob", method: http.MethodGet, path: revUI + "/%2e%2e/%2e%2e/services/providers/example/whoami", hasNot: `"identity"`},
				{method: http.MethodGet, path: revUI + "/app.js", header: map[string]string{"X-Wharf-Replica-Hop": "1"}, hasNot: `"identity"`},
			}},
		// [79]: oversized selectors are denied like any other, and the
		// hub keeps serving.
		attack{finding: "review:79", name: "60 KB workspace selector and a 40 KB deep workspace path",
			before: func(e *attackEnv, vars map[string]string) error {
				vars["bigWS"] = vars["aliceHome"] + ":" + strings.Repeat("a", 60<<10)
				vars["deepWS"] = "root" + strings.Repeat(":a", 20<<10)
				return nil
			},
			steps: []step{
				{as: "bob", method: http.MethodGet, path: revBackend + "/whoami", header: map[string]string{"X-Wharf-Workspace": "{bigWS}"}, want: http.StatusForbidden, hasNot: `"identity"`},
				{as: "bob", method: http.MethodGet, path: "/clusters/{deepWS}/api/v1/namespaces/default/secrets", want: http.StatusForbidden, hasNot: "SecretList"},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/v1/namespaces/default/configmaps", want: http.StatusOK},
				{as: "alice", method: http.MethodGet, path: "/version", want: http.StatusOK},
			}},
	)
}
