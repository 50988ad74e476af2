package hub

import "net/http"

// Direct cross-workspace access: bob, admin of his home, addresses alice's
// workspace by path, by id and through the wildcard. These held in the
// outside test; they stay in the table so they keep holding.
func init() {
	const secret = `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s-{n}"},"stringData":{"k":"alice-secret"}}`
	registerAttacks(
		attack{finding: "baseline", name: "read another home's secrets by path and by id",
			steps: []step{
				{as: "alice", method: http.MethodPost, path: "/clusters/{aliceHome}/api/v1/namespaces/default/secrets", body: secret, want: http.StatusCreated},
				{as: "bob", method: http.MethodGet, path: "/clusters/{aliceHome}/api/v1/namespaces/default/secrets", want: http.StatusForbidden, hasNot: "alice-secret"},
				{as: "bob", method: http.MethodGet, path: "/clusters/{aliceID}/api/v1/namespaces/default/secrets/s-{n}", want: http.StatusForbidden, hasNot: "alice-secret"},
				{as: "bob", method: http.MethodGet, path: "/clusters/*/api/v1/secrets", want: http.StatusForbidden, hasNot: "alice-secret"},
			}},
		attack{finding: "baseline", name: "write into another home",
			steps: []step{
				{as: "bob", method: http.MethodPost, path: "/clusters/{aliceHome}/api/v1/namespaces/default/configmaps",
					body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c-{n}"}}`, want: http.StatusForbidden},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{aliceHome}/api/v1/namespaces/default/configmaps/c-{n}?fieldManager=x",
					ctype: "application/apply-patch+yaml", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c-{n}"}}`, want: http.StatusForbidden},
			}},
		attack{finding: "baseline", name: "own home works",
			steps: []step{
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/api/v1/namespaces/default/configmaps",
					body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c-{n}"}}`, want: http.StatusCreated},
			}},
	)
}
