package hub

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/wharfhub/wharf/hub/cluster"
)

// Existence oracle (finding 11.9) and throttling of failed authentication
// (finding 11.12).
//
// A workspace the caller may not see must answer exactly as a missing one:
// the rows send every request that takes a workspace, by path and by id,
// against an existing workspace bob cannot access and a missing one, twice
// each (inside any decision cache's lifetime), and require byte-identical
// answers once the name bob chose is replaced by a placeholder.

// oracleProbe is one request of the comparison; {T} is the workspace.
type oracleProbe struct {
	name, method, path, body, ctype string
	header                          map[string]string
}

const (
	ssar = `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"secrets","namespace":"default"}}}`
	ssrr = `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{"namespace":"default"}}`
	ssr  = `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
	lsar = `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"user":"bob","resourceAttributes":{"verb":"get","resource":"secrets","namespace":"default"}}}`
	ocm  = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"oracle"}}`
)

var (
	reviewProbes = []oracleProbe{
		{name: "SelfSubjectAccessReview", method: http.MethodPost, path: "/clusters/{T}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body: ssar},
		{name: "SelfSubjectRulesReview", method: http.MethodPost, path: "/clusters/{T}/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", body: ssrr},
		{name: "SelfSubjectReview", method: http.MethodPost, path: "/clusters/{T}/apis/authentication.k8s.io/v1/selfsubjectreviews", body: ssr},
		{name: "LocalSubjectAccessReview", method: http.MethodPost, path: "/clusters/{T}/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews", body: lsar},
		{name: "SelfSubjectAccessReview dry-run", method: http.MethodPost, path: "/clusters/{T}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews?dryRun=All", body: ssar},
		{name: "whoami", method: http.MethodGet, path: "/clusters/{T}/api/whoami"},
	}
	resourceProbes = []oracleProbe{
		{name: "get", method: http.MethodGet, path: "/clusters/{T}/api/v1/namespaces/default/configmaps/oracle"},
		{name: "list", method: http.MethodGet, path: "/clusters/{T}/api/v1/namespaces/default/configmaps"},
		{name: "watch", method: http.MethodGet, path: "/clusters/{T}/api/v1/namespaces/default/configmaps?watch=1"},
		{name: "get namespace", method: http.MethodGet, path: "/clusters/{T}/api/v1/namespaces/default"},
		{name: "list workspaces", method: http.MethodGet, path: "/clusters/{T}/apis/tenancy.wharf.dev/v1alpha1/workspaces"},
		{name: "create", method: http.MethodPost, path: "/clusters/{T}/api/v1/namespaces/default/configmaps", body: ocm},
		{name: "create dry-run", method: http.MethodPost, path: "/clusters/{T}/api/v1/namespaces/default/configmaps?dryRun=All", body: ocm},
		{name: "server-side apply", method: http.MethodPatch, path: "/clusters/{T}/api/v1/namespaces/default/configmaps/oracle?fieldManager=x", body: ocm, ctype: "application/apply-patch+yaml"},
		{name: "merge patch", method: http.MethodPatch, path: "/clusters/{T}/api/v1/namespaces/default/configmaps/oracle", body: `{"data":{"a":"b"}}`},
		{name: "update", method: http.MethodPut, path: "/clusters/{T}/api/v1/namespaces/default/configmaps/oracle", body: ocm},
		{name: "status", method: http.MethodPatch, path: "/clusters/{T}/api/v1/namespaces/default/status", body: `{"status":{}}`},
		{name: "delete", method: http.MethodDelete, path: "/clusters/{T}/api/v1/namespaces/default/configmaps/oracle"},
		{name: "deletecollection", method: http.MethodDelete, path: "/clusters/{T}/api/v1/namespaces/default/configmaps"},
		{name: "impersonate", method: http.MethodGet, path: "/clusters/{T}/api/v1/namespaces/default/configmaps", header: map[string]string{"Impersonate-User": "alice"}},
	}
	discoveryProbes = []oracleProbe{
		{name: "/api", method: http.MethodGet, path: "/clusters/{T}/api"},
		{name: "/api/v1", method: http.MethodGet, path: "/clusters/{T}/api/v1"},
		{name: "/apis", method: http.MethodGet, path: "/clusters/{T}/apis"},
		{name: "/apis aggregated", method: http.MethodGet, path: "/clusters/{T}/apis", header: map[string]string{"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"}},
		{name: "/apis/<group>/<version>", method: http.MethodGet, path: "/clusters/{T}/apis/tenancy.wharf.dev/v1alpha1"},
		{name: "/openapi/v2", method: http.MethodGet, path: "/clusters/{T}/openapi/v2"},
		{name: "/openapi/v3", method: http.MethodGet, path: "/clusters/{T}/openapi/v3"},
		{name: "/openapi/v3/api/v1", method: http.MethodGet, path: "/clusters/{T}/openapi/v3/api/v1"},
		{name: "/version", method: http.MethodGet, path: "/clusters/{T}/version"},
		{name: "/healthz", method: http.MethodGet, path: "/clusters/{T}/healthz"},
		{name: "/metrics", method: http.MethodGet, path: "/clusters/{T}/metrics"},
	}
	proxyProbes = []oracleProbe{
		{name: "X-Wharf-Workspace", method: http.MethodGet, path: "/services/providers/example/whoami", header: map[string]string{"X-Wharf-Workspace": "{T}"}},
		{name: "workspace cookie", method: http.MethodGet, path: "/services/providers/example/whoami", header: map[string]string{"Cookie": "__Host-wharf_workspace={T}"}},
		{name: "X-Wharf-Workspace POST", method: http.MethodPost, path: "/services/providers/example/hub", body: "{}", header: map[string]string{"X-Wharf-Workspace": "{T}"}},
	}
)

// oraclePairs are the (may not see, missing) workspaces compared: by path,
// by id, and a missing child of an existing workspace.
var oraclePairs = [][2]string{
	{"{aliceHome}", "root:users:nobody-{n}"},
	{"{aliceID}", "{missingID}"},
	{"{carolHome}", "{aliceHome}:nobody-{n}"},
}

// answer is a response reduced to what a caller can observe and compare.
type answer struct {
	code   int
	header http.Header
	body   string
}

// probeAnswer sends p for workspace ws as who. The workspace name (what
// the caller chose) becomes {T}; per-request headers are dropped.
func probeAnswer(e *attackEnv, who string, p oracleProbe, ws string, vars map[string]string) answer {
	ws = expand(ws, vars)
	sub := func(s string) string { return strings.ReplaceAll(s, "{T}", ws) }
	h := map[string]string{}
	for k, v := range p.header {
		h[k] = sub(v)
	}
	code, hdr, body := e.sendFull(step{as: who, method: p.method, path: sub(p.path), body: p.body, ctype: p.ctype, header: h}, vars)
	hdr = hdr.Clone()
	for _, k := range []string{"Date", "Audit-Id", "Content-Length"} {
		hdr.Del(k)
	}
	return answer{code: code, header: hdr, body: strings.ReplaceAll(body, ws, "{T}")}
}

func (a answer) String() string {
	keys := make([]string, 0, len(a.header))
	for k := range a.header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%d\n", a.code)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(a.header[k], ", "))
	}
	b.WriteString(a.body)
	return b.String()
}

// sameDenial sends every probe as who against both workspaces of every
// pair, twice, and requires one uniform 403 Status per probe.
func sameDenial(who string, probes []oracleProbe) func(e *attackEnv, vars map[string]string) error {
	return func(e *attackEnv, vars map[string]string) error {
		return sameAnswers(e, vars, who, probes, nil, isForbiddenStatus)
	}
}

// sameAnswers sends every probe as who against both workspaces of every
// pair, twice, and requires the same answer for each probe, the first of
// which must pass refusal. each, when set, readies a probe before it is
// sent.
func sameAnswers(e *attackEnv, vars map[string]string, who string, probes []oracleProbe, each func(*oracleProbe), refusal func(answer) error) error {
	var errs []string
	for _, pair := range oraclePairs {
		for _, p := range probes {
			var first answer
			for i, ws := range []string{pair[0], pair[1], pair[0], pair[1]} {
				if each != nil {
					each(&p)
				}
				a := probeAnswer(e, who, p, ws, vars)
				if i == 0 {
					first = a
					if err := refusal(a); err != nil {
						errs = append(errs, fmt.Sprintf("%s at %s: %v\n%s", p.name, expand(ws, vars), err, a))
						break
					}
					continue
				}
				if a.String() != first.String() {
					errs = append(errs, fmt.Sprintf("%s: %s answers\n%s\nbut %s answers\n%s", p.name, expand(pair[0], vars), first, expand(ws, vars), a))
					break
				}
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d probes tell workspaces apart:\n%s", len(errs), strings.Join(errs, "\n---\n"))
	}
	return nil
}

// isForbiddenStatus checks a is a Kubernetes Status 403 Forbidden.
func isForbiddenStatus(a answer) error {
	if a.code != http.StatusForbidden {
		return fmt.Errorf("status %d, want 403", a.code)
	}
	var st struct {
		Kind, Reason string
		Code         int
	}
	if err := json.Unmarshal([]byte(a.body), &st); err != nil || st.Kind != "Status" || st.Reason != "Forbidden" || st.Code != 403 {
		return fmt.Errorf("not a Forbidden Status (%v)", err)
	}
	return nil
}

// missingID adds a random, valid-looking logical cluster id no workspace has.
func missingID(_ *attackEnv, vars map[string]string) error {
	id, err := cluster.NewID()
	if err != nil {
		return err
	}
	vars["missingID"] = string(id)
	return nil
}

// badToken is a bearer token nobody holds.
func badToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return fmt.Sprintf("Bearer bad-%x", b)
}

func init() {
	registerAttacks(
		attack{finding: "11.9", name: "self reviews and whoami do not tell an inaccessible workspace from a missing one",
			before: missingID, after: sameDenial("bob", reviewProbes)},
		attack{finding: "11.9", name: "resource requests of every verb do not tell an inaccessible workspace from a missing one",
			before: missingID, after: sameDenial("bob", resourceProbes)},
		attack{finding: "11.9", name: "discovery, openapi and version do not tell an inaccessible workspace from a missing one",
			before: missingID, after: sameDenial("bob", discoveryProbes)},
		attack{finding: "11.9", name: "backend proxy workspace selection does not tell an inaccessible workspace from a missing one",
			before: missingID, after: sameDenial("bob", proxyProbes)},
		attack{finding: "11.9", name: "callers who may see a workspace keep honest answers",
			before: missingID,
			steps: []step{
				{as: "alice", method: http.MethodPost, path: "/clusters/{aliceHome}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body: ssar, want: http.StatusCreated},
				{as: "alice", method: http.MethodPost, path: "/clusters/{aliceID}/apis/authentication.k8s.io/v1/selfsubjectreviews", body: ssr, want: http.StatusCreated},
				{as: "alice", method: http.MethodGet, path: "/clusters/{aliceHome}/api", want: http.StatusOK},
				{as: "bob", method: http.MethodGet, path: "/api", want: http.StatusOK},
				{as: "bob", method: http.MethodGet, path: "/api/whoami", want: http.StatusOK},
				{as: "bob", method: http.MethodGet, path: "/clusters/root/version", want: http.StatusOK},
				{as: "hubadmin", method: http.MethodGet, path: "/clusters/root:users:nobody-{n}/api/v1/namespaces", want: http.StatusNotFound},
				{as: "admin", method: http.MethodPost, path: "/clusters/{missingID}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body: ssar, want: http.StatusNotFound},
				{as: "alice", method: http.MethodGet, path: "/services/providers/example/whoami", header: map[string]string{"X-Wharf-Workspace": "{aliceHome}"}, want: http.StatusOK},
			}},
		attack{finding: "11.9", name: "a namespaced grant is enough to see a workspace",
			before: func(e *attackEnv, vars map[string]string) error {
				return e.wantAs(http.StatusCreated, "carol", http.MethodPost, "/clusters/{carolHome}/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
					`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"bob-view-{n}"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"bob"}]}`, vars)
			},
			steps: []step{
				{as: "bob", method: http.MethodGet, path: "/clusters/{carolHome}/api/v1/namespaces/default/configmaps", want: http.StatusOK},
				{as: "bob", method: http.MethodGet, path: "/clusters/{carolHome}/api", want: http.StatusOK},
				{as: "bob", method: http.MethodPost, path: "/clusters/{carolHome}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body: ssar, want: http.StatusCreated},
			},
			after: func(e *attackEnv, vars map[string]string) error {
				return e.wantAs(http.StatusOK, "carol", http.MethodDelete, "/clusters/{carolHome}/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings/bob-view-{n}", "", vars)
			}},
		attack{finding: "11.12", name: "failed authentication is throttled per client address, valid callers are not",
			before: func(e *attackEnv, vars map[string]string) error {
				vars["addr"] = "203.0.113.12"
				vars["otherAddr"] = "203.0.113.13"
				// alice and bob work from the address before the flood;
				// alice's service account gets a token (a JWT) it has
				// never used from anywhere.
				for _, who := range []string{"alice", "bob"} {
					if code, _, body := e.sendFull(step{as: who, method: http.MethodGet, path: "/api/whoami", header: map[string]string{"X-Forwarded-For": "{addr}"}}, vars); code != http.StatusOK {
						return fmt.Errorf("%s from {addr}: %d %s", who, code, body)
					}
				}
				if err := e.wantAs(http.StatusCreated, "alice", http.MethodPost, "/clusters/{aliceHome}/api/v1/namespaces/default/serviceaccounts",
					`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"ci-{n}"}}`, vars); err != nil {
					return err
				}
				code, body := e.as("alice", http.MethodPost, "/clusters/{aliceHome}/api/v1/namespaces/default/serviceaccounts/ci-{n}/token",
					`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`, vars)
				var tr struct {
					Status struct{ Token string } `json:"status"`
				}
				if err := json.Unmarshal([]byte(body), &tr); code != http.StatusCreated || err != nil || tr.Status.Token == "" {
					return fmt.Errorf("token request: %d %v %s", code, err, body)
				}
				vars["saToken"] = tr.Status.Token
				// Untimed: send bad tokens until the address is over
				// budget; the bucket refills far slower than this loop.
				for i := 0; i < 500; i++ {
					code, _, _ := e.sendFull(step{method: http.MethodGet, path: "/api/v1/namespaces",
						header: map[string]string{"Authorization": badToken(), "X-Forwarded-For": "{addr}"}}, vars)
					switch code {
					case http.StatusTooManyRequests:
						return nil
					case http.StatusUnauthorized:
					default:
						return fmt.Errorf("bad token answered %d", code)
					}
				}
				return fmt.Errorf("500 bad tokens from one address were never throttled")
			},
			steps: []step{
				{method: http.MethodGet, path: "/clusters/{aliceHome}/api/v1/namespaces", header: map[string]string{"Authorization": "Bearer bad-again", "X-Forwarded-For": "{addr}"},
					want: http.StatusTooManyRequests, has: `"reason":"TooManyRequests"`, hasNot: "bad-again"},
				{method: http.MethodGet, path: "/services/providers/example/whoami", header: map[string]string{"Authorization": "Bearer bad-again", "X-Forwarded-For": "{addr}"},
					want: http.StatusTooManyRequests, has: `"reason":"TooManyRequests"`},
				// A forged session cookie waits like a guess (issue 24
				// review row 34: floods of unguessable-looking credentials
				// were never throttled); a fresh token the hub minted, or a
				// cookie the hub sealed, keeps working behind the same
				// address (attack review B9).
				{method: http.MethodGet, path: "/api", header: map[string]string{"Cookie": "__Host-wharf_session=forged", "X-Forwarded-For": "{addr}"},
					want: http.StatusTooManyRequests},
				{method: http.MethodGet, path: "/clusters/{aliceHome}/api/v1/namespaces/default/configmaps", header: map[string]string{"Authorization": "Bearer {saToken}", "X-Forwarded-For": "{addr}"},
					want: http.StatusForbidden, has: "system:serviceaccount:default:ci-{n}"},
				// An opaque token that authenticated elsewhere but never
				// from this address is no bypass for a guesser here.
				{as: "carol", method: http.MethodGet, path: "/api/whoami", header: map[string]string{"X-Forwarded-For": "{addr}"}, want: http.StatusTooManyRequests},
				// Valid callers who worked from the address are not
				// penalised.
				{as: "alice", method: http.MethodGet, path: "/clusters/{aliceHome}/api/v1/namespaces/default/configmaps", header: map[string]string{"X-Forwarded-For": "{addr}"}, want: http.StatusOK},
				{as: "bob", method: http.MethodGet, path: "/api/whoami", header: map[string]string{"X-Forwarded-For": "{addr}"}, want: http.StatusOK},
				{as: "alice", method: http.MethodGet, path: "/services/providers/example/whoami", header: map[string]string{"X-Forwarded-For": "{addr}", "X-Wharf-Workspace": "{aliceHome}"}, want: http.StatusOK},
				// Nor are other addresses: a bad token elsewhere is an
				// ordinary 401.
				{method: http.MethodGet, path: "/api", header: map[string]string{"Authorization": "Bearer bad-elsewhere", "X-Forwarded-For": "{otherAddr}"}, want: http.StatusUnauthorized},
				// X-Forwarded-For written by the client left of the trusted
				// proxy's entry is not believed: still the throttled address.
				{method: http.MethodGet, path: "/api", header: map[string]string{"Authorization": "Bearer bad-again", "X-Forwarded-For": "198.51.100.1, {addr}"}, want: http.StatusTooManyRequests},
			},
			after: func(e *attackEnv, vars map[string]string) error {
				code, hdr, body := e.sendFull(step{method: http.MethodGet, path: "/api",
					header: map[string]string{"Authorization": badToken(), "X-Forwarded-For": "{addr}"}}, vars)
				if code != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" || !strings.Contains(body, `"kind":"Status"`) {
					return fmt.Errorf("throttled answer %d, Retry-After %q: %s", code, hdr.Get("Retry-After"), body)
				}
				return nil
			}},
	)
}
