package hub

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Rows of the attack review (the outside tester's attempts log, numbers in
// the finding): direct requests by bob, admin of his home only, at alice's
// home or at root, with no impersonation. All of these held; the rows keep
// them holding. Each row plants what it aims at, so a leak shows in the
// body.

const (
	revSecrets = "/api/v1/namespaces/default/secrets"
	revCMs     = "/api/v1/namespaces/default/configmaps"
	// revSecret and revCM are alice's objects; their marker text must
	// never reach bob.
	revSecret = `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"rs-{n}"},"stringData":{"k":"alice-secret-{n}"}}`
	revCM     = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"rc-{n}"},"data":{"k":"alice-data-{n}"}}`
	// revLeak is in every object of alice's home and in no error: a
	// Secret's data is base64 in answers, so its text cannot be the mark.
	revLeak = `"wharf.dev/cluster":"{aliceID}"`
	// rootLeak is the same for root's objects.
	rootLeak = `"wharf.dev/cluster":"{rootID}"`
)

// aliceObjects plants alice's Secret and ConfigMap in her home, and a
// Secret of the admin's in root.
func aliceObjects(e *attackEnv, vars map[string]string) error {
	if err := e.wantAs(http.StatusCreated, "alice", http.MethodPost, "/clusters/{aliceHome}"+revSecrets, revSecret, vars); err != nil {
		return err
	}
	if err := e.wantAs(http.StatusCreated, "alice", http.MethodPost, "/clusters/{aliceHome}"+revCMs, revCM, vars); err != nil {
		return err
	}
	return e.wantAs(http.StatusCreated, "admin", http.MethodPost, revSecrets, strings.ReplaceAll(revSecret, "alice-secret", "root-secret"), vars)
}

// aliceUnchanged checks alice's ConfigMap is still there with her data.
func aliceUnchanged(e *attackEnv, vars map[string]string) error {
	code, body := e.as("alice", http.MethodGet, "/clusters/{aliceHome}"+revCMs+"/rc-{n}", "", vars)
	if code != http.StatusOK || !strings.Contains(body, expand(`"k":"alice-data-{n}"`, vars)) || strings.Contains(body, "bob") {
		return fmt.Errorf("alice's ConfigMap changed: %d %s", code, body)
	}
	return e.wantAs(http.StatusOK, "alice", http.MethodGet, "/clusters/{aliceHome}"+revSecrets+"/rs-{n}", "", vars)
}

func init() {
	forbid := func(path string) step {
		return step{as: "bob", method: http.MethodGet, path: path, want: http.StatusForbidden, has: `"reason":"Forbidden"`, hasNot: revLeak}
	}
	bobCM := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"rc-{n}"},"data":{"k":"bob"}}`
	registerAttacks(
		// [3]-[7]: by path and id are also baseline rows; root, without
		// a prefix and by name or id, is bob's no more than alice's home.
		attack{finding: "review:3", name: "read alice's and root's secrets by path, id, wildcard and root (attempts 3-7)",
			before: aliceObjects,
			steps: []step{
				forbid("/clusters/{aliceHome}" + revSecrets),
				forbid("/clusters/{aliceID}" + revSecrets + "/rs-{n}"),
				forbid("/clusters/*/api/v1/secrets"),
				{as: "bob", method: http.MethodGet, path: "/api/v1/secrets", want: http.StatusForbidden, hasNot: rootLeak},
				{as: "bob", method: http.MethodGet, path: revSecrets + "/rs-{n}", want: http.StatusForbidden, hasNot: rootLeak},
				{as: "bob", method: http.MethodGet, path: "/clusters/root/api/v1/namespaces", want: http.StatusForbidden},
				{as: "bob", method: http.MethodGet, path: "/clusters/{rootID}" + revSecrets, want: http.StatusForbidden, hasNot: rootLeak},
				{as: "bob", method: http.MethodGet, path: "/clusters/root:users/apis/tenancy.wharf.dev/v1alpha1/workspaces", want: http.StatusForbidden, hasNot: "alice-"},
				{as: "bob", method: http.MethodGet, path: "/apis/tenancy.wharf.dev/v1alpha1/workspaces", want: http.StatusForbidden, hasNot: `"users"`},
			}},
		// [9]: the separator percent-encoded names the same workspace
		// (and alice still reads it); other case names none.
		attack{finding: "review:9", name: "percent-encoded separators and upper-case paths",
			before: func(e *attackEnv, vars map[string]string) error {
				vars["aliceEnc"] = strings.ReplaceAll(vars["aliceHome"], ":", "%3A")
				vars["aliceUpper"] = strings.ToUpper(vars["aliceHome"])
				vars["aliceIDUpper"] = strings.ToUpper(vars["aliceID"])
				return aliceObjects(e, vars)
			},
			steps: []step{
				forbid("/clusters/{aliceEnc}" + revSecrets),
				forbid("/clusters/{aliceUpper}" + revSecrets),
				forbid("/clusters/{aliceIDUpper}" + revSecrets),
				forbid("/clusters/ROOT" + revSecrets),
				{as: "alice", method: http.MethodGet, path: "/clusters/{aliceEnc}" + revSecrets, want: http.StatusOK, has: revLeak},
			}},
		// [11]: definitions are readable only where a workspace admin may
		// read them (his home); root's list is not his, the catalog is
		// everybody's.
		attack{finding: "review:11", name: "list CRDs in root; the catalog is readable",
			steps: []step{
				{as: "bob", method: http.MethodGet, path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", want: http.StatusForbidden},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/apis/apiextensions.k8s.io/v1/customresourcedefinitions", want: http.StatusOK, has: "widgets.example.wharf.dev"},
				{as: "bob", method: http.MethodGet, path: "/apis/providers.wharf.dev/v1alpha1/catalogentries", want: http.StatusOK, has: `"name":"example"`},
			}},
		// [27]: every write verb and a watch, by path and by id.
		attack{finding: "review:27", name: "direct writes and watch on alice's home, every verb (attempt 27)",
			before: aliceObjects,
			steps: func() []step {
				var steps []step
				for _, ws := range []string{"/clusters/{aliceHome}", "/clusters/{aliceID}"} {
					deny := func(method, path, ctype, body string) step {
						return step{as: "bob", method: method, path: ws + path, ctype: ctype, body: body, want: http.StatusForbidden, has: `"reason":"Forbidden"`, hasNot: revLeak}
					}
					steps = append(steps,
						deny(http.MethodPost, revCMs+"?dryRun=All", "", bobCM),
						deny(http.MethodDelete, revCMs, "", ""),
						deny(http.MethodDelete, revCMs+"?dryRun=All", "", ""),
						deny(http.MethodPatch, revCMs+"/rc-{n}?fieldManager=bob&force=true", apply, bobCM),
						deny(http.MethodPatch, revCMs+"/rc-{n}", "application/json-patch+json", `[{"op":"replace","path":"/data/k","value":"bob"}]`),
						deny(http.MethodPatch, revCMs+"/rc-{n}", "application/merge-patch+json", `{"data":{"k":"bob"}}`),
						deny(http.MethodPatch, revCMs+"/rc-{n}", "application/strategic-merge-patch+json", `{"data":{"k":"bob"}}`),
						deny(http.MethodPut, revCMs+"/rc-{n}", "", bobCM),
						deny(http.MethodDelete, revCMs+"/rc-{n}", "", ""),
						deny(http.MethodPut, wsAPI+"/x-{n}/status", "", wsJSON("x-{n}", "{bobID}", "{bobHome}")),
						deny(http.MethodPost, "/api/v1/namespaces/default/serviceaccounts/default/token", "", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`),
						deny(http.MethodGet, revCMs+"?watch=1", "", ""),
						deny(http.MethodDelete, "/api/v1/namespaces/default", "", ""),
						deny(http.MethodPost, "/api/v1/namespaces", "", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bob-{n}"}}`),
					)
				}
				return steps
			}(),
			after: aliceUnchanged},
		// [28]: ways of spelling a workspace that a lax router might
		// resolve to alice's home; none reaches it.
		attack{finding: "review:28", name: "odd addressing of alice's secrets (attempt 28)",
			before: func(e *attackEnv, vars map[string]string) error {
				vars["aliceTail"] = strings.TrimPrefix(vars["aliceHome"], "root")
				vars["aliceIDUpper"] = strings.ToUpper(vars["aliceID"])
				return aliceObjects(e, vars)
			},
			steps: []step{
				forbid("//clusters/{aliceHome}" + revSecrets),
				{as: "bob", method: http.MethodGet, path: "/clusters//{aliceHome}" + revSecrets, want: http.StatusNotFound, hasNot: revLeak},
				forbid("/clusters/%72oot{aliceTail}" + revSecrets),
				forbid("/clusters/{bobHome}/../{aliceHome}" + revSecrets),
				forbid("/clusters/{bobHome}%2F..%2F{aliceHome}" + revSecrets),
				forbid("/clusters/{bobHome}/clusters/{aliceHome}" + revSecrets),
				forbid("/clusters/{aliceIDUpper}" + revSecrets),
				forbid("/clusters/{aliceID}%00" + revSecrets),
				forbid("/clusters/{aliceHome}:" + revSecrets),
				forbid("/clusters/root:{aliceTail}" + revSecrets),
				forbid("/clusters/%2A/api/v1/secrets"),
				forbid("/clusters/*" + revSecrets),
			}},
		// [29]: a watch in bob's home from a resourceVersion before
		// alice's write (versions are hub-wide) replays bob's own events
		// only. The server ends the watch after timeoutSeconds; bob's
		// marker, written after alice's object, proves the replay covered
		// the range where her event would sit.
		attack{finding: "review:29", name: "watch from an old resourceVersion sees no foreign events",
			before: func(e *attackEnv, vars map[string]string) error {
				code, body := e.as("bob", http.MethodGet, "/clusters/{bobHome}"+revCMs+"?limit=1", "", vars)
				var l struct {
					Metadata struct{ ResourceVersion string } `json:"metadata"`
				}
				if err := json.Unmarshal([]byte(body), &l); code != http.StatusOK || err != nil || l.Metadata.ResourceVersion == "" {
					return fmt.Errorf("bob's list: %d %v %s", code, err, body)
				}
				vars["rv"] = l.Metadata.ResourceVersion
				if err := aliceObjects(e, vars); err != nil {
					return err
				}
				return e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}"+revCMs,
					`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"mark-{n}"}}`, vars)
			},
			steps: []step{
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + revCMs + "?watch=1&resourceVersion={rv}&timeoutSeconds=2", want: http.StatusOK, has: "mark-{n}", hasNot: revLeak},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobID}/api/v1/configmaps?watch=1&resourceVersion={rv}&timeoutSeconds=2&allowWatchBookmarks=true", want: http.StatusOK, has: "mark-{n}", hasNot: revLeak},
			}},
		// [30], [53]: list continuation and object names are keys below
		// bob's own cluster; a token or name climbing out of it is refused
		// or finds nothing.
		attack{finding: "review:30", name: "continue tokens whose start key climbs into alice's cluster",
			before: func(e *attackEnv, vars map[string]string) error {
				for i, start := range []string{"../{aliceID}/default/", "/../../{aliceID}/default/rs-{n}", "{aliceID}/default/", "{aliceID}/default/rs-{n}"} {
					tok := expand(fmt.Sprintf(`{"v":"meta.k8s.io/v1","rv":1,"start":%q}`, start), vars)
					vars[fmt.Sprintf("cont%d", i)] = base64.RawURLEncoding.EncodeToString([]byte(tok))
				}
				return aliceObjects(e, vars)
			},
			steps: []step{
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + revSecrets + "?limit=1&continue={cont0}", want: http.StatusBadRequest, has: "continue key is not valid", hasNot: revLeak},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/v1/secrets?limit=1&continue={cont1}", want: http.StatusBadRequest, has: "continue key is not valid", hasNot: revLeak},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobID}" + revSecrets + "?limit=1&continue={cont2}", want: http.StatusBadRequest, hasNot: revLeak},
				// A start key inside alice's cluster without dot segments only
				// continues bob's own list.
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobID}" + revSecrets + "?limit=1&continue={cont3}", want: http.StatusOK, hasNot: revLeak},
			}},
		attack{finding: "review:53", name: "encoded slashes and dot segments in namespace and name",
			before: aliceObjects,
			steps: []step{
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/v1/namespaces/..%2F..%2F{aliceID}%2Fdefault/secrets", want: http.StatusNotFound, hasNot: revLeak},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + revSecrets + "/..%2F..%2F{aliceID}%2Fdefault%2Frs-{n}", want: http.StatusNotFound, hasNot: revLeak},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/v1/namespaces/default%2F..%2F..%2F{aliceID}/secrets", want: http.StatusNotFound, hasNot: revLeak},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + revCMs,
					body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"../../{aliceID}/default/rc-{n}"},"data":{"k":"bob"}}`, want: http.StatusUnprocessableEntity},
				{as: "bob", method: http.MethodPut, path: "/clusters/{bobHome}" + revCMs + "/..%2F..%2F{aliceID}%2Fdefault%2Frc-{n}",
					body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"../../{aliceID}/default/rc-{n}"},"data":{"k":"bob"}}`, want: http.StatusNotFound},
			},
			after: aliceUnchanged},
	)
}
