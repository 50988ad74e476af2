package hub

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// Issue 12 item 8: tokens that others can verify. TokenReview, the
// service-account issuer discovery documents, the kubernetes.io claim and
// Secret-bound tokens, compared with a real kube-apiserver.
//
// Known differences, by design (README, hub/serviceaccounts/doc.go):
//   - a hub service account's groups add system:cluster:<id>, and its
//     extra adds wharf.dev/cluster; the checks drop them before comparing;
//   - a review that does not authenticate says "invalid bearer token"
//     whatever the reason (kube names the failed check), so the checks
//     compare status.authenticated only;
//   - tokens reviewed in another workspace than their own, and people who
//     may not use the workspace, review as unauthenticated (kube has one
//     cluster, so nothing to compare: hub-only checks below).

// tokenReview is the part of a TokenReview answer the checks compare.
type tokenReview struct {
	Status struct {
		Authenticated bool     `json:"authenticated"`
		Error         string   `json:"error"`
		Audiences     []string `json:"audiences"`
		User          struct {
			Username string              `json:"username"`
			UID      string              `json:"uid"`
			Groups   []string            `json:"groups"`
			Extra    map[string][]string `json:"extra"`
		} `json:"user"`
	} `json:"status"`
}

func reviewBody(token string, audiences ...string) string {
	spec := map[string]any{"token": token}
	if len(audiences) > 0 {
		spec["audiences"] = audiences
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec})
	return string(b)
}

const tokenReviewsPath = "/apis/authentication.k8s.io/v1/tokenreviews"

// review posts a TokenReview as the admin of one side and decodes it.
func review(t *testing.T, send func(*testing.T, fidReq) fidAnswer, token string, audiences ...string) tokenReview {
	t.Helper()
	a := send(t, fidReq{Method: http.MethodPost, Path: tokenReviewsPath, Body: reviewBody(token, audiences...)})
	if a.Code != http.StatusCreated {
		t.Fatalf("token review: %s", a)
	}
	var r tokenReview
	if err := json.Unmarshal([]byte(a.Body), &r); err != nil {
		t.Fatalf("token review %s: %v", a.Body, err)
	}
	return r
}

// kubeGroups drops the hub's own workspace group.
func kubeGroups(groups []string) []string {
	var out []string
	for _, g := range groups {
		if !strings.HasPrefix(g, "system:cluster:") {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out
}

// tokenSA creates namespace ns with ServiceAccount bot on both sides.
func (f *fidelity) tokenSA(t *testing.T, ns string) {
	t.Helper()
	f.MustBoth(t, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: bot\n  namespace: %s\n", ns, ns))
}

// mintBoth asks each side for a token of ns/bot with body (a TokenRequest).
func (f *fidelity) mintBoth(t *testing.T, ns, body string) (hub, kube string) {
	t.Helper()
	r := fidReq{Method: http.MethodPost, Path: "/api/v1/namespaces/" + ns + "/serviceaccounts/bot/token", Body: body}
	h, k := f.Same(t, r)
	tok := func(a fidAnswer) string {
		var tr struct {
			Status struct {
				Token string `json:"token"`
			} `json:"status"`
		}
		if a.Code != http.StatusCreated || json.Unmarshal([]byte(a.Body), &tr) != nil || tr.Status.Token == "" {
			t.Fatalf("token request: %s", a)
		}
		return tr.Status.Token
	}
	return tok(h), tok(k)
}

// jwtClaims decodes a JWT's payload, unverified.
func jwtClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d segments", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// shape is a JSON value's structure: object keys (recursively) and the
// kinds of leaves, so two tokens of different clusters compare equal.
func shape(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = shape(e)
		}
		return out
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	default:
		return fmt.Sprintf("%T", v)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func init() {
	registerFidelity("08-tokens/review-service-account", func(t *testing.T, f *fidelity) {
		ns := f.unique("tok-review")
		f.tokenSA(t, ns)
		hubTok, kubeTok := f.mintBoth(t, ns, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`)
		h, k := review(t, f.OnHub, hubTok), review(t, f.OnKube, kubeTok)
		if !h.Status.Authenticated || !k.Status.Authenticated {
			t.Fatalf("authenticated: hub %v (%s), kube %v (%s)", h.Status.Authenticated, h.Status.Error, k.Status.Authenticated, k.Status.Error)
		}
		if h.Status.User.Username != k.Status.User.Username || h.Status.User.Username != "system:serviceaccount:"+ns+":bot" {
			t.Errorf("username: hub %q, kube %q", h.Status.User.Username, k.Status.User.Username)
		}
		if hg, kg := kubeGroups(h.Status.User.Groups), kubeGroups(k.Status.User.Groups); !slices.Equal(hg, kg) {
			t.Errorf("groups: hub %v, kube %v", hg, kg)
		}
		if len(h.Status.Audiences) != 1 || len(k.Status.Audiences) != 1 {
			t.Errorf("audiences: hub %v, kube %v", h.Status.Audiences, k.Status.Audiences)
		}
		if len(h.Status.User.Extra["authentication.kubernetes.io/credential-id"]) != 1 || len(k.Status.User.Extra["authentication.kubernetes.io/credential-id"]) != 1 {
			t.Errorf("credential id: hub %v, kube %v", h.Status.User.Extra, k.Status.User.Extra)
		}
		// A token reviewed for an audience it was not minted for is
		// unauthenticated on both sides; minted for it, it reviews true
		// and reports just that audience.
		if h, k := review(t, f.OnHub, hubTok, "vault"), review(t, f.OnKube, kubeTok, "vault"); h.Status.Authenticated || k.Status.Authenticated {
			t.Errorf("foreign audience: hub %v, kube %v", h.Status.Authenticated, k.Status.Authenticated)
		}
		hubV, kubeV := f.mintBoth(t, ns, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"audiences":["vault"]}}`)
		h, k = review(t, f.OnHub, hubV, "vault", "other"), review(t, f.OnKube, kubeV, "vault", "other")
		if !h.Status.Authenticated || !k.Status.Authenticated || !slices.Equal(h.Status.Audiences, k.Status.Audiences) {
			t.Errorf("vault audience: hub %v %v, kube %v %v", h.Status.Authenticated, h.Status.Audiences, k.Status.Authenticated, k.Status.Audiences)
		}
		// ... and that token is no API credential on either side.
		if h, k := review(t, f.OnHub, hubV), review(t, f.OnKube, kubeV); h.Status.Authenticated || k.Status.Authenticated {
			t.Errorf("vault token as API token: hub %v, kube %v", h.Status.Authenticated, k.Status.Authenticated)
		}
	})

	registerFidelity("08-tokens/review-invalid", func(t *testing.T, f *fidelity) {
		for _, tok := range []string{"garbage", "a.b.c"} {
			if h, k := review(t, f.OnHub, tok), review(t, f.OnKube, tok); h.Status.Authenticated || k.Status.Authenticated || h.Status.Error == "" || k.Status.Error == "" {
				t.Errorf("%q: hub %+v, kube %+v", tok, h.Status, k.Status)
			}
		}
		// Malformed reviews: same codes and messages.
		f.Same(t, fidReq{Method: http.MethodPost, Path: tokenReviewsPath, Body: reviewBody("")})
		f.Same(t, fidReq{Method: http.MethodGet, Path: tokenReviewsPath})
		// A plain user may not review tokens.
		f.sameDenial(t, fidReq{Method: http.MethodPost, Path: tokenReviewsPath, Body: reviewBody("garbage"), As: "alice"})
	})

	registerFidelity("08-tokens/claims", func(t *testing.T, f *fidelity) {
		ns := f.unique("tok-claims")
		f.tokenSA(t, ns)
		hubTok, kubeTok := f.mintBoth(t, ns, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`)
		h, k := jwtClaims(t, hubTok), jwtClaims(t, kubeTok)
		if hs, ks := mustJSON(shape(h["kubernetes.io"])), mustJSON(shape(k["kubernetes.io"])); hs != ks {
			t.Errorf("kubernetes.io claim: hub %s, kube %s", hs, ks)
		}
		if _, ok := h["aud"].([]any); !ok {
			t.Errorf("hub aud is %T, want an array as kube's (%T)", h["aud"], k["aud"])
		}
		for _, c := range []string{"iss", "sub", "exp", "iat", "nbf", "jti"} {
			if mustJSON(shape(h[c])) != mustJSON(shape(k[c])) {
				t.Errorf("claim %s: hub %v, kube %v", c, h[c], k[c])
			}
		}
		if h["sub"] != k["sub"] {
			t.Errorf("sub: hub %v, kube %v", h["sub"], k["sub"])
		}
		kh := h["kubernetes.io"].(map[string]any)
		if kh["namespace"] != ns || kh["serviceaccount"].(map[string]any)["name"] != "bot" {
			t.Errorf("hub kubernetes.io claim %v", kh)
		}
	})

	registerFidelity("08-tokens/discovery", func(t *testing.T, f *fidelity) {
		for p, accept := range map[string]string{"/.well-known/openid-configuration": "application/json", "/openid/v1/jwks": "application/jwk-set+json"} {
			h, k := f.Same(t, fidReq{Path: p, Accept: accept})
			var hm, km map[string]any
			if json.Unmarshal([]byte(h.Body), &hm) != nil || json.Unmarshal([]byte(k.Body), &km) != nil {
				t.Fatalf("%s: hub %s, kube %s", p, h, k)
			}
			if hs, ks := keysOf(hm), keysOf(km); hs != ks {
				t.Errorf("%s fields: hub %s, kube %s", p, hs, ks)
			}
			// As upstream, a plain user needs a grant; service accounts
			// hold system:service-account-issuer-discovery.
			f.sameDenial(t, fidReq{Path: p, Accept: accept, As: "alice"})
		}
		// The one representation, or 406.
		f.Same(t, fidReq{Path: "/openid/v1/jwks", Accept: "application/json"})
		f.Same(t, fidReq{Path: "/.well-known/openid-configuration", Accept: "application/yaml"})
		// Content types and caching, as upstream.
		for p, want := range map[string]string{"/.well-known/openid-configuration": "application/json", "/openid/v1/jwks": "application/jwk-set+json"} {
			for side, base := range map[string]string{"hub": f.Hub.URL + "/clusters/" + f.WS, "kube": "https://" + f.Kube.ReplicaHost(0)} {
				c, tok := f.Hub.client(), f.Hub.Token
				if side == "kube" {
					c, tok = f.kubeHTTP, f.kubeAdmin
				}
				req, _ := http.NewRequest(http.MethodGet, base+p, nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if got := resp.Header.Get("Content-Type"); got != want {
					t.Errorf("%s %s: Content-Type %q, want %q", side, p, got, want)
				}
				if got := resp.Header.Get("Cache-Control"); got != "public, max-age=3600" {
					t.Errorf("%s %s: Cache-Control %q", side, p, got)
				}
			}
		}
		// The issuer of the document is the one of the tokens.
		ns := f.unique("tok-disc")
		f.tokenSA(t, ns)
		hubTok, _ := f.mintBoth(t, ns, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`)
		var cfg struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		_ = json.Unmarshal([]byte(f.OnHub(t, fidReq{Path: "/.well-known/openid-configuration"}).Body), &cfg)
		if iss := jwtClaims(t, hubTok)["iss"]; iss != cfg.Issuer || !strings.HasSuffix(cfg.JWKSURI, "/openid/v1/jwks") {
			t.Errorf("issuer %q jwks_uri %q, token iss %v", cfg.Issuer, cfg.JWKSURI, iss)
		}
	})

	registerFidelity("08-tokens/bound-secret", func(t *testing.T, f *fidelity) {
		ns := f.unique("tok-bound")
		f.tokenSA(t, ns)
		f.MustBoth(t, fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: anchor\n  namespace: %s\n", ns))
		body := `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"boundObjectRef":{"apiVersion":"v1","kind":"Secret","name":"anchor"}}}`
		hubTok, kubeTok := f.mintBoth(t, ns, body)
		h, k := jwtClaims(t, hubTok), jwtClaims(t, kubeTok)
		if hs, ks := mustJSON(shape(h["kubernetes.io"])), mustJSON(shape(k["kubernetes.io"])); hs != ks {
			t.Errorf("bound kubernetes.io claim: hub %s, kube %s", hs, ks)
		}
		if hr, kr := review(t, f.OnHub, hubTok), review(t, f.OnKube, kubeTok); !hr.Status.Authenticated || !kr.Status.Authenticated {
			t.Fatalf("bound token: hub %+v, kube %+v", hr.Status, kr.Status)
		}
		// A uid that is not the Secret's, a missing Secret, a kind that
		// cannot be bound: same answers.
		f.Same(t, fidReq{Method: http.MethodPost, Path: "/api/v1/namespaces/" + ns + "/serviceaccounts/bot/token",
			Body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"boundObjectRef":{"apiVersion":"v1","kind":"Secret","name":"anchor","uid":"not-it"}}}`})
		f.Same(t, fidReq{Method: http.MethodPost, Path: "/api/v1/namespaces/" + ns + "/serviceaccounts/bot/token",
			Body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"boundObjectRef":{"apiVersion":"v1","kind":"Secret","name":"nope"}}}`})
		f.Same(t, fidReq{Method: http.MethodPost, Path: "/api/v1/namespaces/" + ns + "/serviceaccounts/bot/token",
			Body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"boundObjectRef":{"apiVersion":"v1","kind":"ConfigMap","name":"x"}}}`})
		// The token dies with its Secret, on both sides.
		f.Same(t, fidReq{Method: http.MethodDelete, Path: "/api/v1/namespaces/" + ns + "/secrets/anchor"})
		eventually(t, 30*time.Second, func() error {
			hr, kr := review(t, f.OnHub, hubTok), review(t, f.OnKube, kubeTok)
			if hr.Status.Authenticated || kr.Status.Authenticated {
				return fmt.Errorf("after the Secret's deletion: hub %v, kube %v", hr.Status.Authenticated, kr.Status.Authenticated)
			}
			return nil
		})
		// And as a bearer token: 401 on both.
		send := func(c *http.Client, base, tok string) int {
			return f.send(t, c, base, tok, fidReq{Path: "/api/v1/namespaces/" + ns + "/serviceaccounts"}).Code
		}
		if hc, kc := send(f.Hub.client(), f.Hub.URL+"/clusters/"+f.WS, hubTok), send(f.kubeHTTP, "https://"+f.Kube.ReplicaHost(0), kubeTok); hc != http.StatusUnauthorized || kc != http.StatusUnauthorized {
			t.Errorf("dead bound token: hub %d, kube %d", hc, kc)
		}
	})
}

// reviewOnHubIn posts a TokenReview to hub workspace ws as the hub admin.
func (f *fidelity) reviewOnHubIn(t *testing.T, ws, token string) tokenReview {
	t.Helper()
	return review(t, func(t *testing.T, r fidReq) fidAnswer {
		return f.send(t, f.Hub.client(), f.Hub.URL+"/clusters/"+ws, f.Hub.Token, r)
	}, token)
}

func init() {
	// Hub only: kube has one cluster, so where a review is sent cannot
	// matter there. A service-account token reviews as authenticated in
	// its own workspace only, and a person's token only where that person
	// may use the workspace; elsewhere the answer is that of a wrong
	// token, word for word.
	registerFidelity("08-tokens/hub-review-confined", func(t *testing.T, f *fidelity) {
		name := f.unique("tokother")
		f.Hub.createWorkspace("root", name)
		other := "root:" + name
		f.Hub.mustKubectl(other, "create", "serviceaccount", "bot", "-n", "default")
		tok := strings.TrimSpace(f.Hub.mustKubectl(other, "create", "token", "bot", "-n", "default"))
		if r := f.reviewOnHubIn(t, other, tok); !r.Status.Authenticated || r.Status.User.Username != "system:serviceaccount:default:bot" {
			t.Fatalf("own workspace: %+v", r.Status)
		}
		wrong := f.reviewOnHubIn(t, f.WS, "garbage")
		if r := f.reviewOnHubIn(t, f.WS, tok); r.Status.Authenticated || r.Status.Error != wrong.Status.Error || r.Status.User.Username != "" {
			t.Errorf("another workspace's token reviewed in %s: %+v (a wrong token: %+v)", f.WS, r.Status, wrong.Status)
		}
		// alice may not use root:fid: her token reviews as wrong there,
		// and as hers once she may.
		if r := f.reviewOnHubIn(t, f.WS, f.HubAlice); r.Status.Authenticated || r.Status.Error != wrong.Status.Error {
			t.Errorf("alice's token where she has no access: %+v", r.Status)
		}
		f.Hub.mustKubectl(f.WS, "create", "clusterrolebinding", f.unique("alice-access"), "--clusterrole=wharf:workspace-access", "--user=alice")
		eventually(t, 30*time.Second, func() error {
			if r := f.reviewOnHubIn(t, f.WS, f.HubAlice); !r.Status.Authenticated || r.Status.User.Username != "alice" {
				return fmt.Errorf("alice's token where she may: %+v", r.Status)
			}
			return nil
		})
	})
}

// sameDenial is Same for a 403 whose message the hub words its own way
// for every request, not just this item's: it adds why the hub denied
// (": deny: Everything is forbidden.", ": workspace access not
// permitted") after upstream's message. Code, reason and upstream's
// message as a prefix are compared.
func (f *fidelity) sameDenial(t *testing.T, r fidReq) {
	t.Helper()
	h, k := f.Both(t, r)
	if h.Code != k.Code || h.Reason != k.Reason || k.Message == "" || !strings.HasPrefix(h.Message, k.Message) {
		t.Errorf("%s %s:\n  hub:  %s\n  kube: %s", r.Method, r.Path, h, k)
	}
}

func keysOf(m map[string]any) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}
