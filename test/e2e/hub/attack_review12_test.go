package hub

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Rows of the issue-12 attack review (finding ids "r12:<n>"): an outside
// tester, bob, admin of his home only, against the surfaces issue 12
// added: Events, TokenReview, issuer discovery, bound service-account
// tokens, per-workspace discovery and OpenAPI, namespaces/status and
// finalize, garbage collection across workspaces, aggregated ClusterRoles,
// workspace deletion and the Ready condition.

const (
	r12CMs    = "/api/v1/namespaces/default/configmaps"
	r12Events = "/api/v1/namespaces/default/events"
	r12EvNew  = "/apis/events.k8s.io/v1/namespaces/default/events"
	r12CRs    = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
	r12TR     = "/apis/authentication.k8s.io/v1/tokenreviews"
	// r12Absent is a home path nobody has.
	r12Absent = "/clusters/root:users:nobody-aaaaaaaaaaaaa"
	r12Denied = "workspace access not permitted"
)

// r12UID creates body at path as who and returns the new object's uid.
func r12UID(e *attackEnv, who, path, body string, vars map[string]string) (string, error) {
	code, b := e.as(who, http.MethodPost, path, body, vars)
	if code != http.StatusCreated {
		return "", fmt.Errorf("POST %s as %s: %d %s", expand(path, vars), who, code, b)
	}
	var o struct {
		Metadata struct{ UID string } `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(b), &o); err != nil || o.Metadata.UID == "" {
		return "", fmt.Errorf("no uid in %s (%v)", b, err)
	}
	return o.Metadata.UID, nil
}

// r12SAToken gives bob a ServiceAccount sa-{n} and a Secret sec-{n} in his
// home and mints a token for it bound to the Secret, in vars["bobSA"].
func r12SAToken(e *attackEnv, vars map[string]string) error {
	home := "/clusters/{bobHome}/api/v1/namespaces/default"
	if err := e.wantAs(http.StatusCreated, "bob", http.MethodPost, home+"/serviceaccounts",
		`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa-{n}"}}`, vars); err != nil {
		return err
	}
	if err := e.wantAs(http.StatusCreated, "bob", http.MethodPost, home+"/secrets",
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"sec-{n}"}}`, vars); err != nil {
		return err
	}
	// bob's SA may read configmaps in his home, so that a working token
	// shows as 200 there.
	if err := e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"sa-{n}"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},`+
			`"subjects":[{"kind":"ServiceAccount","name":"sa-{n}","namespace":"default"}]}`, vars); err != nil {
		return err
	}
	code, b := e.as("bob", http.MethodPost, home+"/serviceaccounts/sa-{n}/token",
		`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"boundObjectRef":{"kind":"Secret","apiVersion":"v1","name":"sec-{n}"}}}`, vars)
	if code != http.StatusCreated {
		return fmt.Errorf("token: %d %s", code, b)
	}
	var tr struct {
		Status struct{ Token string } `json:"status"`
	}
	if err := json.Unmarshal([]byte(b), &tr); err != nil || tr.Status.Token == "" {
		return fmt.Errorf("no token in %s", b)
	}
	vars["bobSA"] = tr.Status.Token
	return nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// r12Forge derives forged tokens from bob's real one: alg none, HS256
// keyed with the published JWKS, and the real signature over claims moved
// to alice's cluster.
func r12Forge(e *attackEnv, vars map[string]string) error {
	if err := r12SAToken(e, vars); err != nil {
		return err
	}
	parts := strings.Split(vars["bobSA"], ".")
	if len(parts) != 3 {
		return fmt.Errorf("token %q is no JWS", vars["bobSA"])
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return err
	}
	var claims map[string]any
	if err := json.Unmarshal(raw, &claims); err != nil {
		return err
	}
	w, _ := claims["wharf.dev"].(map[string]any)
	if w == nil {
		return fmt.Errorf("no wharf.dev claim in %s", raw)
	}
	w["cluster"] = vars["aliceID"]
	moved, _ := json.Marshal(claims)
	vars["forgedMoved"] = parts[0] + "." + b64(moved) + "." + parts[2]
	vars["forgedNone"] = b64([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	_, jwks := e.as("bob", http.MethodGet, "/clusters/{bobHome}/openid/v1/jwks", "", vars)
	head := b64([]byte(`{"alg":"HS256","typ":"JWT"}`))
	mac := hmac.New(sha256.New, []byte(jwks))
	mac.Write([]byte(head + "." + parts[1]))
	vars["forgedHS"] = head + "." + parts[1] + "." + b64(mac.Sum(nil))
	return nil
}

// r12Bearer speaks with token v from an address of its own, so that the
// failures of forged tokens never spill into other rows' throttle.
func r12Bearer(v string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + v, "X-Forwarded-For": "203.0.113.112"}
}

// r12Rules is a ClusterRole of n rules (resourceNames differ); labels and
// aggregation as given.
func r12Rules(name string, n int, labels, agg string) string {
	var rules []string
	for i := 0; i < n; i++ {
		rules = append(rules, fmt.Sprintf(`{"apiGroups":[""],"resources":["configmaps"],"resourceNames":["%s-%d"],"verbs":["get"]}`, name, i))
	}
	md := `{"name":"` + name + `"`
	if labels != "" {
		md += `,"labels":` + labels
	}
	md += "}"
	s := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":` + md + `,"rules":[` + strings.Join(rules, ",") + `]`
	if agg != "" {
		s += `,"aggregationRule":` + agg
	}
	return s + "}"
}

func init() {
	denied := func(as, method, path string) step {
		return step{as: as, method: method, path: path, want: http.StatusForbidden, has: r12Denied, hasNot: revLeak}
	}
	both := func(as, method, p string, hdr map[string]string) []step {
		a := denied(as, method, "/clusters/{aliceHome}"+p)
		a.header = hdr
		b := denied(as, method, r12Absent+p)
		b.header = hdr
		c := denied(as, method, "/clusters/{aliceID}"+p)
		c.header = hdr
		return []step{a, b, c}
	}
	registerAttacks(
		// 1: OpenAPI caches: a conditional request with bob's own ETag, or
		// any, and a stale ?hash=, must not answer 304/301 (and so reveal
		// the document or its existence) before access is decided.
		attack{finding: "r12:1", name: "OpenAPI ETag, If-None-Match and hash redirects in a workspace bob cannot see",
			steps: func() []step {
				var s []step
				for _, p := range []string{"/openapi/v2", "/openapi/v3", "/openapi/v3/api/v1", "/openapi/v3/apis/rbac.authorization.k8s.io/v1?hash=deadbeef", "/apis?hash=x"} {
					s = append(s, both("bob", http.MethodGet, p, map[string]string{"If-None-Match": "*"})...)
				}
				s = append(s, both("bob", http.MethodGet, "/openapi/v2", map[string]string{"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})...)
				s = append(s, both("bob", http.MethodGet, "/apis", map[string]string{"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})...)
				// bob's own stale hash: answered (301 or the document), never 403.
				s = append(s, step{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/openapi/v3/api/v1?hash=deadbeef", hasNot: r12Denied})
				return s
			}()},
		// 2: issuer discovery is per workspace like every path: bob, and
		// bob's service account, get the same 403 at alice's home and at
		// a home nobody has.
		attack{finding: "r12:2", name: "issuer discovery in other workspaces, as a person and as a service account",
			before: r12SAToken,
			steps: func() []step {
				var s []step
				for _, p := range []string{"/.well-known/openid-configuration", "/openid/v1/jwks"} {
					s = append(s, both("bob", http.MethodGet, p, nil)...)
					for _, st := range both("", http.MethodGet, p, r12Bearer("{bobSA}")) {
						st.has = ""
						s = append(s, st)
					}
					s = append(s, step{method: http.MethodGet, path: "/clusters/{bobHome}" + p, header: r12Bearer("{bobSA}"), want: http.StatusOK})
					s = append(s, step{method: http.MethodGet, path: p, want: http.StatusUnauthorized})
				}
				s = append(s, step{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/openid/v1/jwks", header: map[string]string{"Accept": "text/html"}, want: http.StatusNotAcceptable})
				return s
			}()},
		// 3: forged service-account JWTs: alg none, HS256 keyed with the
		// JWKS, claims moved to alice's cluster under the real signature.
		attack{finding: "r12:3", name: "forged service-account tokens (alg none, HS256 with the JWKS, moved cluster claim)",
			before: r12Forge,
			steps: func() []step {
				s := []step{{method: http.MethodGet, path: "/clusters/{bobHome}" + r12CMs, header: r12Bearer("{bobSA}"), want: http.StatusOK}}
				for _, v := range []string{"{forgedNone}", "{forgedHS}", "{forgedMoved}"} {
					for _, w := range []string{"/clusters/{bobHome}", "/clusters/{aliceHome}", "/clusters/{aliceID}"} {
						s = append(s, step{method: http.MethodGet, path: w + r12CMs, header: r12Bearer(v), want: http.StatusUnauthorized, hasNot: revLeak})
					}
					s = append(s, step{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + r12TR,
						body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"` + v + `"}}`, want: http.StatusCreated, hasNot: `"authenticated":true`})
				}
				return s
			}()},
		// 4: a token bound to bob's Secret works only in bob's home and
		// dies with the Secret, even when one of the same name returns.
		attack{finding: "r12:4", name: "Secret-bound token: other workspaces, Secret deleted and recreated, foreign bound uid",
			before: func(e *attackEnv, vars map[string]string) error {
				if err := aliceObjects(e, vars); err != nil {
					return err
				}
				uid, err := r12UID(e, "alice", "/clusters/{aliceHome}"+revSecrets, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"sec-{n}"}}`, vars)
				vars["aliceSecretUID"] = uid
				if err != nil {
					return err
				}
				return r12SAToken(e, vars)
			},
			steps: []step{
				{method: http.MethodGet, path: "/clusters/{bobHome}" + r12CMs, header: r12Bearer("{bobSA}"), want: http.StatusOK},
				{method: http.MethodGet, path: "/clusters/{aliceHome}" + revSecrets, header: r12Bearer("{bobSA}"), want: http.StatusForbidden, hasNot: revLeak},
				{method: http.MethodGet, path: "/clusters/*" + revSecrets, header: r12Bearer("{bobSA}"), want: http.StatusForbidden, hasNot: revLeak},
				// A bound uid of alice's Secret of the same name is not bob's.
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/api/v1/namespaces/default/serviceaccounts/sa-{n}/token",
					body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"boundObjectRef":{"kind":"Secret","apiVersion":"v1","name":"sec-{n}","uid":"{aliceSecretUID}"}}}`,
					want: http.StatusConflict, hasNot: `"token":"ey`},
				// boundObjectRef has no namespace (as kube, the field is
				// dropped): the token binds bob's own Secret of his namespace.
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/api/v1/namespaces/default/serviceaccounts/sa-{n}/token",
					body:   `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"boundObjectRef":{"kind":"Secret","apiVersion":"v1","name":"sec-{n}","namespace":"kube-system"}}}`,
					hasNot: `{aliceSecretUID}`},
				{as: "bob", method: http.MethodDelete, path: "/clusters/{bobHome}" + revSecrets + "/sec-{n}", want: http.StatusOK},
				{method: http.MethodGet, path: "/clusters/{bobHome}" + r12CMs, header: r12Bearer("{bobSA}"), want: http.StatusUnauthorized},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + revSecrets, body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"sec-{n}"}}`, want: http.StatusCreated},
				{method: http.MethodGet, path: "/clusters/{bobHome}" + r12CMs, header: r12Bearer("{bobSA}"), want: http.StatusUnauthorized},
				{as: "alice", method: http.MethodGet, path: "/clusters/{aliceHome}" + revSecrets + "/sec-{n}", want: http.StatusOK, has: "{aliceSecretUID}"},
			}},
		// 5: TokenReview: bob's reviews of alice's valid token and of a
		// garbage token read the same; his service account's token is
		// authenticated only in his home; reviews in alice's home are 403.
		attack{finding: "r12:5", name: "TokenReview as an oracle and across workspaces",
			before: r12SAToken,
			steps: func() []step {
				tr := func(tok, aud string) string {
					return `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"` + tok + `"` + aud + `}}`
				}
				var s []step
				for _, tok := range []string{"alice-token", "carol-token", "no-such-token-{n}"} {
					s = append(s, step{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + r12TR, body: tr(tok, ""), header: map[string]string{"X-Forwarded-For": "10.12.5.1"},
						want: http.StatusCreated, has: `"status":{"user":{},"error":"invalid bearer token"}`})
				}
				s = append(s,
					step{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + r12TR, body: tr("{bobSA}", ""), want: http.StatusCreated, has: `"authenticated":true`},
					step{as: "bob", method: http.MethodPost, path: "/clusters/{bobID}" + r12TR, body: tr("{bobSA}", `,"audiences":["https://evil.example"]`), want: http.StatusCreated, hasNot: `"authenticated":true`},
					step{as: "admin", method: http.MethodPost, path: r12TR, body: tr("{bobSA}", ""), want: http.StatusCreated, hasNot: `"authenticated":true`},
					step{as: "admin", method: http.MethodPost, path: "/clusters/{aliceHome}" + r12TR, body: tr("{bobSA}", ""), want: http.StatusCreated, hasNot: `"authenticated":true`},
					step{as: "alice", method: http.MethodPost, path: "/clusters/{aliceHome}" + r12TR, body: tr("{bobSA}", ""), want: http.StatusCreated, hasNot: `"authenticated":true`},
					step{as: "alice", method: http.MethodPost, path: "/clusters/{aliceHome}" + r12TR, body: tr("bob-token", ""), want: http.StatusCreated, hasNot: `"authenticated":true`},
				)
				for _, st := range both("bob", http.MethodPost, r12TR, nil) {
					st.body = tr("alice-token", "")
					s = append(s, st)
				}
				return s
			}()},
		// 6: an Event's workspace is where it was written: a forged
		// wharf.dev/cluster annotation on every write path and both APIs,
		// and involvedObject/regarding/related naming another namespace.
		attack{finding: "r12:6", name: "Events with a forged cluster annotation on every write path, and foreign involved objects",
			steps: func() []step {
				ann := `"annotations":{"wharf.dev/cluster":"{aliceID}"}`
				core := `{"apiVersion":"v1","kind":"Event","metadata":{"name":"ev-{n}",` + ann + `},"involvedObject":{"kind":"ConfigMap","namespace":"default","name":"x"},` +
					`"reason":"R","message":"m-{n}","type":"Normal","source":{"component":"c"},"firstTimestamp":"2026-12-01T00:00:00Z","lastTimestamp":"2026-12-01T00:00:00Z","count":1}`
				nw := `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"ew-{n}",` + ann + `},"eventTime":"2026-12-01T00:00:00.000000Z",` +
					`"reportingController":"x/y","reportingInstance":"i","action":"A","reason":"R","type":"Normal","regarding":{"kind":"ConfigMap","namespace":"default","name":"x"}}`
				own := `"wharf.dev/cluster":"{bobID}"`
				ok := func(code int, s step) step {
					s.as, s.want, s.has, s.hasNot = "bob", code, own, revLeak
					return s
				}
				inv := func(path, body string) step {
					return step{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + path, body: body, want: http.StatusUnprocessableEntity}
				}
				return []step{
					ok(http.StatusCreated, step{method: http.MethodPost, path: "/clusters/{bobHome}" + r12Events, body: core}),
					ok(http.StatusOK, step{method: http.MethodPatch, path: "/clusters/{bobHome}" + r12Events + "/ev-{n}", body: `{"metadata":{` + ann + `}}`}),
					ok(http.StatusOK, step{method: http.MethodPatch, path: "/clusters/{bobHome}" + r12Events + "/ev-{n}?fieldManager=m&force=true", ctype: apply, body: core}),
					ok(http.StatusOK, step{method: http.MethodPut, path: "/clusters/{bobHome}" + r12Events + "/ev-{n}", body: core}),
					ok(http.StatusOK, step{method: http.MethodPatch, path: "/clusters/{bobHome}" + r12Events + "/ev-{n}", ctype: "application/json-patch+json",
						body: `[{"op":"add","path":"/metadata/annotations/wharf.dev~1cluster","value":"{aliceID}"}]`}),
					ok(http.StatusCreated, step{method: http.MethodPost, path: "/clusters/{bobHome}" + r12EvNew, body: nw}),
					ok(http.StatusOK, step{method: http.MethodPatch, path: "/clusters/{bobHome}" + r12EvNew + "/ew-{n}?fieldManager=m&force=true", ctype: apply, body: nw}),
					inv(r12Events, strings.Replace(strings.Replace(core, `"namespace":"default"`, `"namespace":"kube-system"`, 1), "ev-{n}", "ev2-{n}", 1)),
					// As upstream, an events.k8s.io/v1 event (eventTime set)
					// may regard another namespace of its own workspace.
					ok(http.StatusCreated, step{method: http.MethodPost, path: "/clusters/{bobHome}" + r12EvNew, body: strings.Replace(strings.Replace(nw, `"namespace":"default"`, `"namespace":"kube-system"`, 1), "ew-{n}", "ew2-{n}", 1)}),
					// alice's home has none of bob's events.
					{as: "alice", method: http.MethodGet, path: "/clusters/{aliceHome}" + r12Events, want: http.StatusOK, hasNot: "m-{n}"},
					{as: "alice", method: http.MethodGet, path: "/clusters/{aliceHome}" + r12EvNew + "?fieldSelector=reason%3DR", want: http.StatusOK, hasNot: "ew-{n}"},
					// Across workspaces, the admin sees them in bob's cluster.
					{as: "admin", method: http.MethodGet, path: "/clusters/*/api/v1/events?fieldSelector=metadata.name%3Dev-{n}", want: http.StatusOK, has: own, hasNot: revLeak},
					{as: "admin", method: http.MethodGet, path: "/clusters/*/apis/events.k8s.io/v1/events?fieldSelector=metadata.name%3Dew-{n}", want: http.StatusOK, has: own, hasNot: revLeak},
				}
			}()},
		// 7: every verb on alice's events, and the cross-workspace lists.
		attack{finding: "r12:7", name: "Events of another workspace on every verb, field selectors, /clusters/*",
			before: func(e *attackEnv, vars map[string]string) error {
				return e.wantAs(http.StatusCreated, "alice", http.MethodPost, "/clusters/{aliceHome}"+r12Events,
					`{"apiVersion":"v1","kind":"Event","metadata":{"name":"aev-{n}"},"involvedObject":{"kind":"ConfigMap","namespace":"default","name":"x"},"reason":"R","message":"alice-ev-{n}","type":"Normal","source":{"component":"c"}}`, vars)
			},
			steps: func() []step {
				var s []step
				for _, p := range []string{r12Events, r12Events + "?fieldSelector=involvedObject.name%3Dx", r12Events + "?watch=true&timeoutSeconds=1", r12EvNew, "/api/v1/events", r12Events + "/aev-{n}"} {
					s = append(s, both("bob", http.MethodGet, p, nil)...)
				}
				s = append(s, both("bob", http.MethodDelete, r12Events, nil)...)
				s = append(s, both("bob", http.MethodDelete, r12Events+"/aev-{n}", nil)...)
				for _, st := range both("bob", http.MethodPatch, r12Events+"/aev-{n}?fieldManager=m", nil) {
					st.ctype, st.body = apply, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"aev-{n}"},"message":"bob"}`
					s = append(s, st)
				}
				for _, st := range both("bob", http.MethodPost, r12Events, nil) {
					st.body = `{"apiVersion":"v1","kind":"Event","metadata":{"name":"bev-{n}"},"involvedObject":{"kind":"ConfigMap","namespace":"default","name":"x"},"reason":"R","message":"m","type":"Normal","source":{"component":"c"}}`
					s = append(s, st)
				}
				s = append(s,
					step{as: "bob", method: http.MethodGet, path: "/clusters/*/api/v1/events", want: http.StatusForbidden, hasNot: "alice-ev-{n}"},
					step{as: "bob", method: http.MethodGet, path: "/clusters/*/apis/events.k8s.io/v1/events?watch=true&timeoutSeconds=1", want: http.StatusForbidden, hasNot: "alice-ev-{n}"},
					step{as: "alice", method: http.MethodGet, path: "/clusters/{aliceHome}" + r12Events + "/aev-{n}", want: http.StatusOK, has: "alice-ev-{n}", hasNot: "bob"},
				)
				return s
			}()},
		// 8: garbage collection: bob's dependent names alice's ConfigMap by
		// its uid, with blockOwnerDeletion and a finalizer of his holding
		// it; alice's foreground deletion must not wait for it, and bob's
		// dependent is collected as orphaned.
		attack{finding: "r12:8", name: "ownerReference to another workspace's uid: foreground deletion not held, dependent collected",
			before: func(e *attackEnv, vars map[string]string) error {
				uid, err := r12UID(e, "alice", "/clusters/{aliceHome}"+r12CMs, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"own-{n}"},"data":{"k":"alice-data-{n}"}}`, vars)
				vars["aliceUID"] = uid
				return err
			},
			steps: []step{
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + r12CMs, want: http.StatusCreated,
					body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dep-{n}","finalizers":["example.com/hold"],"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"own-{n}","uid":"{aliceUID}","blockOwnerDeletion":true,"controller":true}]}}`},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + r12CMs, want: http.StatusCreated,
					body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"own-{n}"}}`},
				{as: "alice", method: http.MethodDelete, path: "/clusters/{aliceHome}" + r12CMs + "/own-{n}", body: `{"propagationPolicy":"Foreground"}`, want: http.StatusOK},
			},
			after: func(e *attackEnv, vars map[string]string) error {
				if err := waitFor(30*time.Second, func() error {
					return e.wantAs(http.StatusNotFound, "alice", http.MethodGet, "/clusters/{aliceHome}"+r12CMs+"/own-{n}", "", vars)
				}); err != nil {
					return fmt.Errorf("alice's foreground deletion held: %w", err)
				}
				if err := waitFor(30*time.Second, func() error {
					code, b := e.as("bob", http.MethodGet, "/clusters/{bobHome}"+r12CMs+"/dep-{n}", "", vars)
					if code != http.StatusOK || !strings.Contains(b, "deletionTimestamp") {
						return fmt.Errorf("bob's dependent: %d %s", code, b)
					}
					return nil
				}); err != nil {
					return err
				}
				code, b := e.as("bob", http.MethodGet, "/clusters/{bobHome}"+r12CMs+"/own-{n}", "", vars)
				if code != http.StatusOK || strings.Contains(b, "deletionTimestamp") {
					return fmt.Errorf("bob's namesake touched: %d %s", code, b)
				}
				return nil
			},
			cleanup: func(e *attackEnv, vars map[string]string) error {
				e.as("bob", http.MethodPatch, "/clusters/{bobHome}"+r12CMs+"/dep-{n}", `{"metadata":{"finalizers":null}}`, vars)
				return nil
			}},
		// 9: hub kinds as dependents of a foreign uid, and a ProviderBinding
		// of bob owning nothing of alice's.
		attack{finding: "r12:9", name: "bob's Workspace owned by the uid of alice's Workspace",
			before: func(e *attackEnv, vars map[string]string) error {
				uid, err := r12UID(e, "alice", "/clusters/{aliceHome}"+wsAPI, `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"own9-{n}"}}`, vars)
				vars["aliceUID"] = uid
				return err
			},
			steps: []step{
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + wsAPI, want: http.StatusCreated,
					body: `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"gc-{n}","ownerReferences":[{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","name":"own9-{n}","uid":"{aliceUID}","blockOwnerDeletion":true}]}}`},
			},
			after: func(e *attackEnv, vars map[string]string) error {
				// bob's orphaned Workspace is collected in his home.
				if err := waitFor(60*time.Second, func() error {
					return e.wantAs(http.StatusNotFound, "bob", http.MethodGet, "/clusters/{bobHome}"+wsAPI+"/gc-{n}", "", vars)
				}); err != nil {
					return err
				}
				code, b := e.as("alice", http.MethodGet, "/clusters/{aliceHome}"+wsAPI+"/own9-{n}", "", vars)
				if code != http.StatusOK || strings.Contains(b, "deletionTimestamp") {
					return fmt.Errorf("alice's workspace touched: %d %s", code, b)
				}
				return e.wantAs(http.StatusOK, "alice", http.MethodDelete, "/clusters/{aliceHome}"+wsAPI+"/own9-{n}", "", vars)
			}},
		// 10: aggregation is per workspace: bob's role labelled to
		// aggregate into admin and view does not reach alice's, and what
		// bob writes into an aggregated role's rules is not kept.
		attack{finding: "r12:10", name: "aggregated ClusterRoles: labels reaching other workspaces, client rules kept",
			steps: []step{
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + r12CRs, want: http.StatusCreated,
					body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"mark-{n}","labels":{"rbac.authorization.k8s.io/aggregate-to-admin":"true","rbac.authorization.k8s.io/aggregate-to-view":"true","rbac.authorization.k8s.io/aggregate-to-edit":"true"}},` +
						`"rules":[{"apiGroups":[""],"resources":["configmaps"],"resourceNames":["bob-marker-{n}"],"verbs":["get"]}]}`},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + r12CRs, want: http.StatusCreated,
					body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"agg-{n}"},"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"rbac.authorization.k8s.io/aggregate-to-admin":"true"}}]},` +
						`"rules":[{"nonResourceURLs":["/metrics","/debug/*"],"verbs":["*"]},{"apiGroups":["authentication.k8s.io"],"resources":["*"],"verbs":["impersonate"],"resourceNames":["system:masters"]}]}`},
				{as: "bob", method: http.MethodGet, path: "/metrics", want: http.StatusForbidden},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/metrics", want: http.StatusForbidden},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/debug/pprof/", want: http.StatusForbidden},
				{as: "bob", method: http.MethodGet, path: "/clusters/{aliceHome}" + revCMs, want: http.StatusForbidden},
			},
			after: func(e *attackEnv, vars map[string]string) error {
				// Give the aggregation controller time to write back.
				if err := waitFor(20*time.Second, func() error {
					_, b := e.as("bob", http.MethodGet, "/clusters/{bobHome}"+r12CRs+"/agg-{n}", "", vars)
					if !strings.Contains(b, expand("bob-marker-{n}", vars)) {
						return fmt.Errorf("bob's agg-{n} not aggregated yet: %s", b)
					}
					return nil
				}); err != nil {
					return err
				}
				_, b := e.as("bob", http.MethodGet, "/clusters/{bobHome}"+r12CRs+"/agg-{n}", "", vars)
				if strings.Contains(b, "/metrics") || strings.Contains(b, "system:masters") {
					return fmt.Errorf("client rules kept in an aggregated role: %s", b)
				}
				for _, r := range []string{"admin", "edit", "view"} {
					for _, w := range []string{"{aliceHome}", "{carolHome}"} {
						_, b := e.as("admin", http.MethodGet, "/clusters/"+w+r12CRs+"/"+r, "", vars)
						if strings.Contains(b, expand("bob-marker-{n}", vars)) {
							return fmt.Errorf("bob's rule aggregated into %s of %s: %s", r, w, b)
						}
					}
				}
				return nil
			},
			cleanup: func(e *attackEnv, vars map[string]string) error {
				e.as("bob", http.MethodDelete, "/clusters/{bobHome}"+r12CRs+"/mark-{n}", "", vars)
				e.as("bob", http.MethodDelete, "/clusters/{bobHome}"+r12CRs+"/agg-{n}", "", vars)
				return nil
			}},
		// 11: the write-back budget: past --max-workspace-rbac-rules
		// written back, an aggregated role keeps only what the hub
		// stored, never client rules (which would escape the RBAC quota).
		attack{finding: "r12:11", name: "aggregated roles past the write-back budget keep no client rules; quota holds",
			before: func(e *attackEnv, vars map[string]string) error {
				if err := e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}"+r12CRs,
					r12Rules(expand("big-{n}", vars), 6000, `{"r12.example/agg-{n}":"true"}`, ""), vars); err != nil {
					return err
				}
				for i := 0; i < 4; i++ {
					if err := e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}"+r12CRs,
						r12Rules(expand(fmt.Sprintf("agg%d-{n}", i), vars), 0, "", `{"clusterRoleSelectors":[{"matchLabels":{"r12.example/agg-{n}":"true"}}]}`), vars); err != nil {
						return err
					}
				}
				return waitFor(30*time.Second, func() error {
					_, b := e.as("bob", http.MethodGet, "/clusters/{bobHome}"+r12CRs+"/agg2-{n}", "", vars)
					if !strings.Contains(b, expand("big-{n}-5999", vars)) {
						return fmt.Errorf("agg2 not written back yet")
					}
					return nil
				})
			},
			steps: []step{
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + r12CRs, want: http.StatusCreated,
					body: r12Rules("over-{n}", 3, "", `{"clusterRoleSelectors":[{"matchLabels":{"r12.example/agg-{n}":"true"}}]}`)},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + r12CRs + "/over-{n}", want: http.StatusOK, hasNot: `"over-{n}-0"`},
				{as: "bob", method: http.MethodPut, path: "/clusters/{bobHome}" + r12CRs + "/agg3-{n}", want: 0,
					body: r12Rules("agg3-{n}", 3, "", `{"clusterRoleSelectors":[{"matchLabels":{"r12.example/agg-{n}":"true"}}]}`)},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + r12CRs + "/agg3-{n}", want: http.StatusOK, hasNot: `"agg3-{n}-0"`},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + r12CRs + "/agg3-{n}?fieldManager=m&force=true", ctype: apply, want: 0,
					body: r12Rules("agg3-{n}", 3, "", `{"clusterRoleSelectors":[{"matchLabels":{"r12.example/agg-{n}":"true"}}]}`)},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + r12CRs + "/agg3-{n}", want: http.StatusOK, hasNot: `"agg3-{n}-0"`},
				// The plain quota still holds: 6000 stored + 15000 > 20000.
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + r12CRs, want: http.StatusForbidden, has: "exceeded quota",
					body: r12Rules("plain-{n}", 15000, "", "")},
				// alice's home is untouched by bob's budget.
				{as: "alice", method: http.MethodPost, path: "/clusters/{aliceHome}" + r12CRs, want: http.StatusCreated, body: r12Rules("alice-{n}", 10, "", "")},
				{as: "alice", method: http.MethodDelete, path: "/clusters/{aliceHome}" + r12CRs + "/alice-{n}", want: http.StatusOK},
			},
			cleanup: func(e *attackEnv, vars map[string]string) error {
				for _, n := range []string{"big-{n}", "agg0-{n}", "agg1-{n}", "agg2-{n}", "agg3-{n}", "over-{n}", "plain-{n}"} {
					e.as("bob", http.MethodDelete, "/clusters/{bobHome}"+r12CRs+"/"+n, "", vars)
				}
				return nil
			}},
		// 12: workspace deletion of bob's child with content held by his
		// finalizer: the sibling whose name extends it, bob's home, alice
		// and the hub-wide CRDs are untouched; creates in it are 403.
		attack{finding: "r12:12", name: "deleting a child workspace: held content, prefix-named sibling, hub-wide objects",
			before: func(e *attackEnv, vars map[string]string) error {
				if err := aliceObjects(e, vars); err != nil {
					return err
				}
				for _, w := range []string{"k{n}", "k{n}0"} {
					if err := e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}"+wsAPI,
						`{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"`+w+`"}}`, vars); err != nil {
						return err
					}
				}
				for _, w := range []string{"k{n}", "k{n}0"} {
					if err := waitFor(30*time.Second, func() error {
						return e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}:"+w+r12CMs,
							`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","finalizers":["example.com/hold"]}}`, vars)
					}); err != nil {
						return err
					}
				}
				return e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}"+r12CMs,
					`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"home-{n}"}}`, vars)
			},
			steps: []step{
				{as: "bob", method: http.MethodDelete, path: "/clusters/{bobHome}" + wsAPI + "/k{n}", want: http.StatusOK},
				// bob cannot forge the hub's conditions on the way out.
				{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + wsAPI + "/k{n}", body: `{"status":{"conditions":[{"type":"ContentDeleted","status":"True","reason":"Forged"}]}}`},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + wsAPI + "/k{n}", body: `{"metadata":{"finalizers":[]}}`},
			},
			after: func(e *attackEnv, vars map[string]string) error {
				if err := waitFor(30*time.Second, func() error {
					_, b := e.as("bob", http.MethodGet, "/clusters/{bobHome}"+wsAPI+"/k{n}", "", vars)
					if !strings.Contains(b, "SomeFinalizersRemain") {
						return fmt.Errorf("k{n}: no SomeFinalizersRemain: %s", b)
					}
					if strings.Contains(b, "Forged") {
						return fmt.Errorf("k{n}: forged condition kept: %s", b)
					}
					return nil
				}); err != nil {
					return err
				}
				if err := e.wantAs(http.StatusForbidden, "bob", http.MethodPost, "/clusters/{bobHome}:k{n}"+r12CMs, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late"}}`, vars); err != nil {
					return err
				}
				// bob releases his finalizer; the deletion completes.
				if err := e.wantAs(http.StatusOK, "bob", http.MethodPatch, "/clusters/{bobHome}:k{n}"+r12CMs+"/held", `{"metadata":{"finalizers":null}}`, vars); err != nil {
					return err
				}
				if err := waitFor(60*time.Second, func() error {
					return e.wantAs(http.StatusNotFound, "bob", http.MethodGet, "/clusters/{bobHome}"+wsAPI+"/k{n}", "", vars)
				}); err != nil {
					return err
				}
				for _, c := range []struct{ who, path string }{
					{"bob", "/clusters/{bobHome}:k{n}0" + r12CMs + "/held"},
					{"bob", "/clusters/{bobHome}" + r12CMs + "/home-{n}"},
					{"bob", "/clusters/{bobHome}" + wsAPI + "/k{n}0"},
					{"alice", "/clusters/{aliceHome}" + revCMs + "/rc-{n}"},
					{"admin", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.wharf.dev"},
					{"admin", ceBase + "/example"},
				} {
					code, b := e.as(c.who, http.MethodGet, c.path, "", vars)
					if code != http.StatusOK || strings.Contains(b, "deletionTimestamp") {
						return fmt.Errorf("%s: %d %s", expand(c.path, vars), code, b)
					}
				}
				return nil
			},
			cleanup: func(e *attackEnv, vars map[string]string) error {
				e.as("bob", http.MethodPatch, "/clusters/{bobHome}:k{n}"+r12CMs+"/held", `{"metadata":{"finalizers":null}}`, vars)
				e.as("bob", http.MethodPatch, "/clusters/{bobHome}:k{n}0"+r12CMs+"/held", `{"metadata":{"finalizers":null}}`, vars)
				e.as("bob", http.MethodDelete, "/clusters/{bobHome}"+wsAPI+"/k{n}0", "", vars)
				return nil
			}},
		// 13: the Ready condition and phase come from the hub on every
		// write path.
		attack{finding: "r12:13", name: "Workspace Ready condition forged on create, update, patch, apply, status",
			steps: func() []step {
				forged := `"status":{"phase":"Ready","cluster":"{aliceID}","conditions":[{"type":"Ready","status":"False","reason":"ForgedR","message":"x","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`
				ws := `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"rd-{n}"},` + forged + `}`
				p := "/clusters/{bobHome}" + wsAPI
				return []step{
					{as: "bob", method: http.MethodPost, path: p, body: ws, want: http.StatusCreated, hasNot: "ForgedR"},
					{as: "bob", method: http.MethodPatch, path: p + "/rd-{n}", body: `{` + forged + `}`, hasNot: "ForgedR"},
					{as: "bob", method: http.MethodPatch, path: p + "/rd-{n}?fieldManager=m&force=true", ctype: apply, body: ws, hasNot: "ForgedR"},
					{as: "bob", method: http.MethodPatch, path: p + "/rd-{n}", ctype: "application/json-patch+json",
						body: `[{"op":"replace","path":"/status/conditions","value":[{"type":"Ready","status":"False","reason":"ForgedR"}]}]`, hasNot: "ForgedR"},
					{as: "bob", method: http.MethodPatch, path: p + "/rd-{n}/status", body: `{` + forged + `}`, want: http.StatusMethodNotAllowed},
					{as: "bob", method: http.MethodPut, path: p + "/rd-{n}/status", body: ws, want: http.StatusMethodNotAllowed},
					{as: "bob", method: http.MethodGet, path: p + "/rd-{n}", want: http.StatusOK, has: `"status":"True"`, hasNot: "ForgedR"},
					{as: "bob", method: http.MethodGet, path: p + "/rd-{n}", want: http.StatusOK, hasNot: `"cluster":"{aliceID}"`},
					{as: "bob", method: http.MethodDelete, path: p + "/rd-{n}", want: http.StatusOK},
				}
			}()},
		// 14: namespaces/status and finalize, and the 404 of a missing
		// namespace, are no oracle in a workspace bob cannot see.
		attack{finding: "r12:14", name: "namespaces status/finalize and missing-namespace 404 in other workspaces",
			steps: func() []step {
				ns := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"},"spec":{"finalizers":[]},"status":{"phase":"Terminating"}}`
				var s []step
				for _, m := range []struct{ method, path string }{
					{http.MethodGet, "/api/v1/namespaces/default/status"},
					{http.MethodGet, "/api/v1/namespaces/nosuch-{n}"},
					{http.MethodGet, "/api/v1/namespaces/nosuch-{n}/status"},
					{http.MethodPut, "/api/v1/namespaces/default/finalize"},
					{http.MethodPut, "/api/v1/namespaces/nosuch-{n}/finalize"},
					{http.MethodPut, "/api/v1/namespaces/default/status"},
					{http.MethodPatch, "/api/v1/namespaces/default/status"},
					{http.MethodPost, "/api/v1/namespaces/nosuch-{n}/configmaps"},
					{http.MethodPost, "/api/v1/namespaces/default/configmaps"},
					{http.MethodDelete, "/api/v1/namespaces/default"},
					{http.MethodDelete, "/api/v1/namespaces"},
				} {
					for _, st := range both("bob", m.method, m.path, nil) {
						if m.method != http.MethodGet && m.method != http.MethodDelete {
							st.body = ns
						}
						s = append(s, st)
					}
				}
				s = append(s,
					step{as: "alice", method: http.MethodGet, path: "/clusters/{aliceHome}/api/v1/namespaces/default", want: http.StatusOK, hasNot: "Terminating"},
					step{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/api/v1/namespaces/nosuch-{n}/configmaps",
						body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`, want: http.StatusNotFound, has: `namespaces \"nosuch-{n}\" not found`},
				)
				return s
			}()},
		// 15: the namespace controller's NamespaceContentDeleted event
		// lands in the deleted namespace's workspace only.
		attack{finding: "r12:15", name: "namespace controller events stay in the namespace's workspace",
			before: func(e *attackEnv, vars map[string]string) error {
				for _, who := range []string{"alice", "bob"} {
					if err := e.wantAs(http.StatusCreated, who, http.MethodPost, "/clusters/{"+who+"Home}/api/v1/namespaces",
						`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"evns-{n}"}}`, vars); err != nil {
						return err
					}
				}
				return nil
			},
			steps: []step{{as: "bob", method: http.MethodDelete, path: "/clusters/{bobHome}/api/v1/namespaces/evns-{n}", want: http.StatusOK}},
			after: func(e *attackEnv, vars map[string]string) error {
				sel := "?fieldSelector=involvedObject.name%3Devns-{n}"
				if err := waitFor(60*time.Second, func() error {
					_, b := e.as("bob", http.MethodGet, "/clusters/{bobHome}"+r12Events+sel, "", vars)
					if !strings.Contains(b, "NamespaceContentDeleted") {
						return fmt.Errorf("no event in bob's home: %s", b)
					}
					return nil
				}); err != nil {
					return err
				}
				_, b := e.as("alice", http.MethodGet, "/clusters/{aliceHome}"+r12Events+sel, "", vars)
				if strings.Contains(b, "NamespaceContentDeleted") {
					return fmt.Errorf("bob's namespace event in alice's home: %s", b)
				}
				if err := e.wantAs(http.StatusOK, "alice", http.MethodGet, "/clusters/{aliceHome}/api/v1/namespaces/evns-{n}", "", vars); err != nil {
					return err
				}
				return e.wantAs(http.StatusOK, "alice", http.MethodDelete, "/clusters/{aliceHome}/api/v1/namespaces/evns-{n}", "", vars)
			}},
		// 16: a provider group bound in alice's home appears nowhere in (carol: bob's home has bindings from earlier rows)
		// carol's discovery or OpenAPI, and carol's v2 document does not
		// change with it (no oracle of alice's bindings).
		attack{finding: "r12:16", name: "provider group bound by alice in another person's discovery, OpenAPI and ETags",
			before: func(e *attackEnv, vars map[string]string) error {
				_, h, _ := e.sendFull(step{as: "carol", method: http.MethodGet, path: "/clusters/{carolHome}/openapi/v2"}, vars)
				if h != nil {
					vars["carolV2"] = h.Get("ETag")
				}
				_, h, _ = e.sendFull(step{as: "carol", method: http.MethodGet, path: "/clusters/{carolHome}/openapi/v3"}, vars)
				if h != nil {
					vars["carolV3"] = h.Get("ETag")
				}
				if err := e.wantAs(http.StatusCreated, "alice", http.MethodPost, "/clusters/{aliceHome}"+pbBase, bindingTo("example", "example"), vars); err != nil {
					return err
				}
				return waitFor(30*time.Second, func() error {
					return e.wantAs(http.StatusOK, "alice", http.MethodGet, "/clusters/{aliceHome}/apis/example.wharf.dev/v1alpha1", "", vars)
				})
			},
			steps: []step{
				{as: "alice", method: http.MethodGet, path: "/clusters/{aliceHome}/apis", want: http.StatusOK, has: "example.wharf.dev"},
				{as: "carol", method: http.MethodGet, path: "/clusters/{carolHome}/apis", want: http.StatusOK, hasNot: "example.wharf.dev"},
				{as: "carol", method: http.MethodGet, path: "/clusters/{carolHome}/apis", header: map[string]string{"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}, want: http.StatusOK, hasNot: "example.wharf.dev"},
				{as: "carol", method: http.MethodGet, path: "/clusters/{carolHome}/apis/example.wharf.dev", want: http.StatusNotFound},
				{as: "carol", method: http.MethodGet, path: "/clusters/{carolHome}/apis/example.wharf.dev/v1alpha1", want: http.StatusNotFound},
				{as: "carol", method: http.MethodGet, path: "/clusters/{carolHome}/openapi/v3", want: http.StatusOK, hasNot: "example.wharf.dev"},
				{as: "carol", method: http.MethodGet, path: "/clusters/{carolHome}/openapi/v3/apis/example.wharf.dev/v1alpha1", want: http.StatusNotFound},
				{as: "carol", method: http.MethodGet, path: "/clusters/{carolHome}/openapi/v2", want: http.StatusOK, hasNot: "example.wharf.dev"},
				{as: "carol", method: http.MethodGet, path: "/clusters/{carolHome}/openapi/v2", header: map[string]string{"If-None-Match": "{carolV2}"}, want: http.StatusNotModified},
				{as: "carol", method: http.MethodGet, path: "/clusters/{carolHome}/openapi/v3", header: map[string]string{"If-None-Match": "{carolV3}"}, want: http.StatusNotModified},
				{as: "alice", method: http.MethodGet, path: "/clusters/{aliceHome}/openapi/v3", want: http.StatusOK, has: "example.wharf.dev", hasNot: "{carolHome}"},
			},
			cleanup: func(e *attackEnv, vars map[string]string) error {
				e.as("alice", http.MethodDelete, "/clusters/{aliceHome}"+pbBase+"/example", "", vars)
				return waitFor(60*time.Second, func() error {
					return e.wantAs(http.StatusNotFound, "alice", http.MethodGet, "/clusters/{aliceHome}"+pbBase+"/example", "", vars)
				})
			}},
		// 17: the OpenAPI index is under the caller's prefix: forwarded
		// prefix/host headers from bob (loopback is a trusted proxy here)
		// do not reach alice's index through a cache.
		attack{finding: "r12:17", name: "OpenAPI index cache poisoned with forwarded headers",
			steps: []step{
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/openapi/v3", header: map[string]string{"X-Forwarded-Prefix": "/evil-{n}", "X-Forwarded-Host": "evil-{n}.example", "X-Forwarded-Proto": "http"}, want: http.StatusOK},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobID}/openapi/v3", want: http.StatusOK},
				{as: "alice", method: http.MethodGet, path: "/clusters/{aliceHome}/openapi/v3", want: http.StatusOK, has: `"/clusters/{aliceHome}/openapi/v3/api/v1?hash=`, hasNot: "evil-{n}"},
				{as: "alice", method: http.MethodGet, path: "/clusters/{aliceID}/openapi/v3", want: http.StatusOK, has: `"/clusters/{aliceID}/openapi/v3/api/v1?hash=`, hasNot: "{bob"},
				{as: "alice", method: http.MethodGet, path: "/clusters/{aliceHome}/openapi/v3", want: http.StatusOK, hasNot: "{bobID}"},
			}},
		// 19 (FAILS today): dry-run answers echo a forged wharf.dev/cluster
		// annotation naming alice's cluster, on every kind (nothing is
		// stored; a real create rewrites it). The defence is that the
		// annotation is the hub's on every write path, dry-run included.
		attack{finding: "r12:19", name: "dry-run answers keep a forged wharf.dev/cluster annotation",
			steps: func() []step {
				ann := `"annotations":{"wharf.dev/cluster":"{aliceID}"}`
				own := `"wharf.dev/cluster":"{bobID}"`
				s := func(method, path, ctype, body string) step {
					return step{as: "bob", method: method, path: "/clusters/{bobHome}" + path, ctype: ctype, body: body, has: own, hasNot: revLeak}
				}
				return []step{
					s(http.MethodPost, r12CMs+"?dryRun=All", "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dr-{n}",`+ann+`}}`),
					s(http.MethodPost, r12Events+"?dryRun=All", "", `{"apiVersion":"v1","kind":"Event","metadata":{"name":"dr-{n}",`+ann+`},"involvedObject":{"kind":"ConfigMap","namespace":"default","name":"x"},"reason":"R","message":"m","type":"Normal","source":{"component":"c"}}`),
					s(http.MethodPost, r12CRs+"?dryRun=All", "", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"dr-{n}",`+ann+`}}`),
					s(http.MethodPatch, r12CMs+"/dr-{n}?dryRun=All&fieldManager=m", apply, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dr-{n}",`+ann+`}}`),
					{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + r12CMs + "/dr-{n}", want: http.StatusNotFound},
				}
			}()},
		// 18: service-account identities and the sdk/clusters informer's
		// wildcard: bob's SA lists nothing across workspaces, with or
		// without impersonation headers naming a provider.
		attack{finding: "r12:18", name: "bob's service account at /clusters/* and impersonating a provider",
			before: r12SAToken,
			steps: []step{
				{method: http.MethodGet, path: "/clusters/*/api/v1/events", header: r12Bearer("{bobSA}"), want: http.StatusForbidden},
				{method: http.MethodGet, path: "/clusters/*/apis/example.wharf.dev/v1alpha1/widgets", header: r12Bearer("{bobSA}"), want: http.StatusForbidden},
				{as: "bob", method: http.MethodGet, path: "/clusters/*/apis/example.wharf.dev/v1alpha1/widgets", want: http.StatusForbidden},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/apis/example.wharf.dev/v1alpha1/widgets", header: map[string]string{"Impersonate-User": "system:wharf:provider:example"}, want: http.StatusForbidden},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + r12Events, header: map[string]string{"Impersonate-User": "system:wharf:provider:example"}, want: http.StatusForbidden,
					body: `{"apiVersion":"v1","kind":"Event","metadata":{"name":"imp-{n}"},"involvedObject":{"kind":"ConfigMap","namespace":"default","name":"x"},"reason":"R","message":"m","type":"Normal","source":{"component":"c"}}`},
			}},
	)
}
