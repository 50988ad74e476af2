package authn_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/request"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/wharfhub/wharf/hub/authn"
	"github.com/wharfhub/wharf/test/idp"
)

const (
	clientID   = "wharf"
	adminToken = "admin-secret-token"
)

var adminInfo = &user.DefaultInfo{Name: "wharf-admin", UID: "wharf-admin", Groups: []string{user.SystemPrivilegedGroup}}

// newAuth parses args as hub flags would and returns a ready authenticator
// (OIDC discovery done) with the admin token and a token file as statics.
func newAuth(t testing.TB, p *idp.IdP, args ...string) *authn.Authenticator {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	o := authn.NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	base := []string{"--oidc-issuer-url=" + p.URL, "--oidc-client-id=" + clientID, "--oidc-ca-file=" + p.CAFile}
	if err := fs.Parse(append(base, args...)); err != nil {
		t.Fatal(err)
	}
	if errs := o.Validate(); len(errs) > 0 {
		t.Fatalf("Validate: %v", errs)
	}
	tokenFile := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte("file-token,bob,bob-uid,\"team-a,team-b\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	static, err := authn.StaticTokens(adminToken, adminInfo, tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	a, err := o.Authenticator(ctx, static, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Discovery runs in background; wait for it rather than for a time.
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return a.HealthCheck() == nil, nil
	}); err != nil {
		t.Fatalf("oidc never became ready: %v", a.HealthCheck())
	}
	return a
}

// authenticate runs a with token as a bearer, like the apiserver does.
func authenticate(t *testing.T, a *authn.Authenticator, token string) (user.Info, error) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/api", nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	resp, ok, err := a.AuthenticateRequest(r)
	if err != nil {
		if strings.Contains(err.Error(), token) {
			t.Errorf("error reveals the token: %v", err)
		}
		return nil, err
	}
	if !ok {
		return nil, nil
	}
	return resp.User, nil
}

func TestUnionOrderAndAnonymous(t *testing.T) {
	p := idp.Start(t)
	a := newAuth(t, p, "--oidc-groups-claim=groups", "--oidc-groups-prefix=oidc:")
	for _, tc := range []struct {
		name, token string
		wantUser    string
		wantGroups  []string
	}{
		{"admin token", adminToken, "wharf-admin", []string{user.SystemPrivilegedGroup, user.AllAuthenticated}},
		{"token file", "file-token", "bob", []string{"team-a", "team-b", user.AllAuthenticated}},
		{"oidc", p.Sign(t, p.Claims(clientID, nil)), "ada@example.com", []string{"oidc:dev", "oidc:ops", user.AllAuthenticated}},
		{"anonymous", "", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := authenticate(t, a, tc.token)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.wantUser == "" {
				if u != nil {
					t.Fatalf("anonymous request authenticated as %v", u)
				}
				return
			}
			if u == nil || u.GetName() != tc.wantUser || !slices.Equal(u.GetGroups(), tc.wantGroups) {
				t.Fatalf("got %v, want %s %v", u, tc.wantUser, tc.wantGroups)
			}
		})
	}
}

// TestProviderMintedToken takes a token minted by the OpenID provider's
// own ID token code path, with claims from its user info storage.
func TestProviderMintedToken(t *testing.T) {
	p := idp.Start(t)
	a := newAuth(t, p, "--oidc-groups-claim=groups")
	tok, err := p.Mint(context.Background(), clientID, "u-456")
	if err != nil {
		t.Fatal(err)
	}
	u, err := authenticate(t, a, tok)
	if err != nil || u == nil {
		t.Fatalf("provider-minted token refused: %v", err)
	}
	if u.GetName() != "grace@example.com" || !slices.Contains(u.GetGroups(), "admins") {
		t.Fatalf("got %v", u)
	}
}

func TestOIDCTokens(t *testing.T) {
	p := idp.Start(t)
	forged := idp.NewKey(t, p.SigningKeyID()) // same kid, unpublished key
	unknown := idp.NewKey(t, "never-published")
	set := func(k string, v any) func(map[string]any) { return func(c map[string]any) { c[k] = v } }
	for _, tc := range []struct {
		name     string
		args     []string
		token    func() string
		wantUser string // "" means refused
		wantGrps []string
	}{
		{name: "valid, email claim unprefixed, groups prefixed", args: []string{"--oidc-groups-claim=groups", "--oidc-groups-prefix=idp:"},
			token: func() string { return p.Sign(t, p.Claims(clientID, nil)) }, wantUser: "ada@example.com", wantGrps: []string{"idp:dev", "idp:ops"}},
		{name: "username prefix on email", args: []string{"--oidc-username-prefix=oidc:"},
			token: func() string { return p.Sign(t, p.Claims(clientID, nil)) }, wantUser: "oidc:ada@example.com"},
		{name: "sub claim gets issuer prefix by default", args: []string{"--oidc-username-claim=sub"},
			token: func() string { return p.Sign(t, p.Claims(clientID, nil)) }, wantUser: p.URL + "#u-123"},
		{name: "sub claim with prefix disabled", args: []string{"--oidc-username-claim=sub", "--oidc-username-prefix=-"},
			token: func() string { return p.Sign(t, p.Claims(clientID, nil)) }, wantUser: "u-123"},
		{name: "name claim with explicit prefix", args: []string{"--oidc-username-claim=name", "--oidc-username-prefix=oidc:"},
			token: func() string { return p.Sign(t, p.Claims(clientID, nil)) }, wantUser: "oidc:ada"},
		{name: "missing username claim", args: []string{"--oidc-username-claim=preferred_username"},
			token: func() string { return p.Sign(t, p.Claims(clientID, nil)) }},
		{name: "email not verified",
			token: func() string { return p.Sign(t, p.Claims(clientID, set("email_verified", false))) }},
		{name: "system: user name refused", args: []string{"--oidc-username-claim=name", "--oidc-username-prefix=-"},
			token: func() string { return p.Sign(t, p.Claims(clientID, set("name", "system:admin"))) }},
		{name: "system: groups dropped", args: []string{"--oidc-groups-claim=groups"},
			token: func() string {
				return p.Sign(t, p.Claims(clientID, set("groups", []string{"system:masters", "dev"})))
			},
			wantUser: "ada@example.com", wantGrps: []string{"dev"}},
		{name: "required claim present", args: []string{"--oidc-required-claim=hd=example.com", "--oidc-required-claim=tier=gold"},
			token: func() string {
				return p.Sign(t, p.Claims(clientID, func(c map[string]any) { c["hd"] = "example.com"; c["tier"] = "gold" }))
			}, wantUser: "ada@example.com"},
		{name: "required claim missing", args: []string{"--oidc-required-claim=hd=example.com"},
			token: func() string { return p.Sign(t, p.Claims(clientID, nil)) }},
		{name: "required claim wrong value", args: []string{"--oidc-required-claim=hd=example.com"},
			token: func() string { return p.Sign(t, p.Claims(clientID, set("hd", "evil.com"))) }},
		{name: "expired",
			token: func() string {
				return p.Sign(t, p.Claims(clientID, func(c map[string]any) {
					c["iat"] = time.Now().Add(-2 * time.Hour).Unix()
					c["exp"] = time.Now().Add(-time.Hour).Unix()
				}))
			}},
		{name: "wrong audience", token: func() string { return p.Sign(t, p.Claims("other-client", nil)) }},
		{name: "CLI client audience accepted", args: []string{"--oidc-cli-client-id=wharf-cli"},
			token: func() string { return p.Sign(t, p.Claims("wharf-cli", nil)) }, wantUser: "ada@example.com"},
		{name: "hub client audience still accepted with a CLI client", args: []string{"--oidc-cli-client-id=wharf-cli"},
			token: func() string { return p.Sign(t, p.Claims(clientID, nil)) }, wantUser: "ada@example.com"},
		{name: "CLI audience without --oidc-cli-client-id", token: func() string { return p.Sign(t, p.Claims("wharf-cli", nil)) }},
		{name: "third audience with a CLI client", args: []string{"--oidc-cli-client-id=wharf-cli"},
			token: func() string { return p.Sign(t, p.Claims("other-client", nil)) }},
		{name: "wrong issuer", token: func() string { return p.Sign(t, p.Claims(clientID, set("iss", "https://evil.example.com"))) }},
		{name: "bad signature (unpublished key, published kid)", token: func() string { return idp.SignWith(t, forged, p.Claims(clientID, nil)) }},
		{name: "unknown key", token: func() string { return idp.SignWith(t, unknown, p.Claims(clientID, nil)) }},
		{name: "alg none", token: func() string { return unsigned(t, p.Claims(clientID, nil)) }},
		{name: "tampered payload", token: func() string { return tamper(t, p.Sign(t, p.Claims(clientID, nil))) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAuth(t, p, tc.args...)
			u, err := authenticate(t, a, tc.token())
			if tc.wantUser == "" {
				if u != nil {
					t.Fatalf("accepted as %v, want refused", u)
				}
				if err == nil {
					t.Fatalf("refused without an error to log")
				}
				t.Logf("refused: %v", err)
				return
			}
			if err != nil || u == nil {
				t.Fatalf("refused: %v", err)
			}
			want := append(append([]string{}, tc.wantGrps...), user.AllAuthenticated)
			if u.GetName() != tc.wantUser || !slices.Equal(u.GetGroups(), want) {
				t.Fatalf("got %s %v, want %s %v", u.GetName(), u.GetGroups(), tc.wantUser, want)
			}
		})
	}
}

// TestKeyRotation: the IdP publishes a new key and signs with it; tokens
// with the new key id are accepted (JWKS refetched), old ones still too.
func TestKeyRotation(t *testing.T) {
	p := idp.Start(t)
	a := newAuth(t, p)
	old := p.Sign(t, p.Claims(clientID, nil))
	if u, err := authenticate(t, a, old); u == nil {
		t.Fatalf("token before rotation refused: %v", err)
	}
	before := p.SigningKeyID()
	if k := p.Rotate(t); k.ID() == before {
		t.Fatal("rotation did not make a new key")
	}
	rotated := p.Sign(t, p.Claims(clientID, nil))
	for name, tok := range map[string]string{"new key": rotated, "old key": old} {
		if u, err := authenticate(t, a, tok); u == nil {
			t.Errorf("%s refused after rotation: %v", name, err)
		}
	}
}

// TestUnauthorizedIsGeneric: behind the apiserver's authentication filter
// every failure is the same 401 Status, whatever check failed.
func TestUnauthorizedIsGeneric(t *testing.T) {
	p := idp.Start(t)
	a := newAuth(t, p)
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	h := genericapifilters.WithAuthentication(ok, a, genericapifilters.Unauthorized(clientgoscheme.Codecs), nil, nil)
	h = genericapifilters.WithRequestInfo(h, &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")})
	expired := p.Sign(t, p.Claims(clientID, func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() }))
	bodies := map[string]string{}
	for name, tok := range map[string]string{
		"none": "", "unknown static": "nope", "expired": expired,
		"wrong aud": p.Sign(t, p.Claims("x", nil)), "alg none": unsigned(t, p.Claims(clientID, nil)),
	} {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces", nil)
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("%s: status %d, want 401", name, w.Code)
		}
		var st struct {
			Kind, Message, Reason string
			Code                  int
		}
		if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || st.Kind != "Status" || st.Code != 401 {
			t.Fatalf("%s: body %q is not a 401 Status", name, w.Body.String())
		}
		bodies[w.Body.String()] = name
	}
	if len(bodies) != 1 {
		t.Fatalf("failure bodies differ by cause: %v", bodies)
	}
	r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces", nil)
	r.Header.Set("Authorization", "Bearer "+p.Sign(t, p.Claims(clientID, nil)))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("valid token: status %d", w.Code)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		valid bool
	}{
		{"off", nil, true},
		{"issuer and client", []string{"--oidc-issuer-url=https://idp.example.com", "--oidc-client-id=x"}, true},
		{"issuer without client", []string{"--oidc-issuer-url=https://idp.example.com"}, false},
		{"client without issuer", []string{"--oidc-client-id=x"}, false},
		{"http issuer", []string{"--oidc-issuer-url=http://idp.example.com", "--oidc-client-id=x"}, false},
		{"groups claim alone", []string{"--oidc-groups-claim=groups"}, false},
		{"cli client alone", []string{"--oidc-cli-client-id=cli"}, false},
		{"cli client", []string{"--oidc-issuer-url=https://idp.example.com", "--oidc-client-id=x", "--oidc-cli-client-id=cli"}, true},
		{"missing ca file", []string{"--oidc-issuer-url=https://idp.example.com", "--oidc-client-id=x", "--oidc-ca-file=/nonexistent"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := authn.NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if errs := o.Validate(); (len(errs) == 0) != tc.valid {
				t.Fatalf("Validate() = %v, want valid=%v", errs, tc.valid)
			}
		})
	}
}

func TestTokenHash(t *testing.T) {
	h := authn.TokenHash("secret")
	if strings.Contains(h, "secret") || !strings.HasPrefix(h, "sha256:") || len(h) != len("sha256:")+8 {
		t.Fatalf("TokenHash = %q", h)
	}
}

// unsigned returns an alg:none JWT.
func unsigned(t *testing.T, claims map[string]any) string {
	t.Helper()
	p, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc(p) + "."
}

// tamper swaps the payload of a signed token for one naming another user.
func tamper(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	p, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	p = []byte(strings.Replace(string(p), "ada@example.com", "eve@example.com", 1))
	parts[1] = base64.RawURLEncoding.EncodeToString(p)
	return strings.Join(parts, ".")
}

// TestIdPDown: the hub must start and serve static tokens while the IdP is
// unreachable; OIDC tokens are refused until discovery succeeds.
func TestIdPDown(t *testing.T) {
	p := idp.Start(t)
	tok := p.Sign(t, p.Claims(clientID, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := authn.NewOptions()
	o.OIDC.IssuerURL, o.OIDC.ClientID = "https://127.0.0.1:1", clientID
	static, err := authn.StaticTokens(adminToken, adminInfo, "")
	if err != nil {
		t.Fatal(err)
	}
	a, err := o.Authenticator(ctx, static, nil)
	if err != nil {
		t.Fatalf("authenticator with unreachable IdP: %v", err)
	}
	if a.HealthCheck() == nil {
		t.Fatal("healthy before discovery")
	}
	if u, err := authenticate(t, a, adminToken); u == nil || u.GetName() != "wharf-admin" {
		t.Fatalf("admin token with IdP down: %v %v", u, err)
	}
	if u, _ := authenticate(t, a, tok); u != nil {
		t.Fatalf("OIDC token accepted before discovery: %v", u)
	}
}

// TestStaticTokensDropEmptyGroup: an empty groups field in the token file
// gives no groups, not the group "" (which the provider proxy refuses).
func TestStaticTokensDropEmptyGroup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(file, []byte("t1,carol,c-uid,\"\"\nt2,dave,d-uid,\"a,,b\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := authn.StaticTokens("", nil, file)
	if err != nil {
		t.Fatal(err)
	}
	for tok, want := range map[string][]string{"t1": nil, "t2": {"a", "b"}} {
		resp, ok, err := a.AuthenticateToken(context.Background(), tok)
		if !ok || err != nil {
			t.Fatalf("%s: %v %v", tok, ok, err)
		}
		if got := resp.User.GetGroups(); !slices.Equal(got, want) {
			t.Errorf("%s: groups %q, want %q", tok, got, want)
		}
	}
}
