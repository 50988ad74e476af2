package idp_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/wharfhub/wharf/test/idp"
)

const (
	clientID    = "wharf-cli"
	redirectURI = "http://127.0.0.1:40001/callback" // registered without a port
)

var ada = idp.User{Username: "ada", Password: "lovelace", Email: "ada@example.com", Groups: []string{"dev", "ops"}}

func start(t *testing.T, device bool) *idp.IdP {
	return idp.StartWith(t, idp.Options{
		Clients:    []idp.Client{{ID: clientID, RedirectURIs: []string{"http://127.0.0.1/callback"}}},
		Users:      []idp.User{ada},
		DeviceFlow: device,
	})
}

// browser is an HTTP client trusting the IdP, with a cookie jar, that
// stops at redirects to the relying party's loopback address.
func browser(t *testing.T, p *idp.IdP) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	jar, _ := cookiejar.New(nil)
	return &http.Client{
		Jar:       jar,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(r *http.Request, _ []*http.Request) error {
			if strings.HasPrefix(r.URL.String(), "http://127.0.0.1:40001/") {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
}

func challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorize runs /authorize and returns the login page URL it lands on.
func authorize(t *testing.T, p *idp.IdP, c *http.Client, state, verifier string) string {
	t.Helper()
	q := url.Values{
		"client_id": {clientID}, "redirect_uri": {redirectURI}, "response_type": {"code"},
		"scope": {"openid email profile groups offline_access"}, "state": {state},
		"code_challenge": {challenge(verifier)}, "code_challenge_method": {"S256"},
	}
	resp, err := c.Get(p.URL + "/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/login" {
		t.Fatalf("authorize landed on %d %s, want the login form", resp.StatusCode, resp.Request.URL)
	}
	return resp.Request.URL.String()
}

// login authorizes and logs in as ada; it returns the code.
func login(t *testing.T, p *idp.IdP, c *http.Client, verifier string) string {
	t.Helper()
	page := authorize(t, p, c, "st-1", verifier)
	resp, err := idp.SubmitLogin(context.Background(), c, page, ada.Username, ada.Password)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("login: %d, want 302 to the client", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != redirectURI {
		t.Fatalf("redirected to %s, want %s", got, redirectURI)
	}
	if loc.Query().Get("state") != "st-1" || loc.Query().Get("code") == "" {
		t.Fatalf("callback query %v lacks code or state", loc.Query())
	}
	return loc.Query().Get("code")
}

type tokens struct {
	IDToken      string `json:"id_token"`
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	Error        string `json:"error"`
}

// token POSTs form to the token endpoint.
func token(t *testing.T, p *idp.IdP, c *http.Client, form url.Values) (int, tokens) {
	t.Helper()
	form.Set("client_id", clientID)
	resp, err := c.PostForm(p.URL+"/oauth/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tk tokens
	if err := json.NewDecoder(resp.Body).Decode(&tk); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, tk
}

// verify checks the ID token's signature against the published JWKS and
// returns its claims.
func verify(t *testing.T, p *idp.IdP, c *http.Client, raw string) map[string]any {
	t.Helper()
	resp, err := c.Get(p.URL + "/keys")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	keys := set.Key(tok.Headers[0].KeyID)
	if len(keys) != 1 {
		t.Fatalf("kid %q not published", tok.Headers[0].KeyID)
	}
	claims := map[string]any{}
	if err := tok.Claims(keys[0].Key, &claims); err != nil {
		t.Fatalf("ID token signature: %v", err)
	}
	return claims
}

func idpSubmit(c *http.Client, page, user, pass string) (*http.Response, error) {
	return idp.SubmitLogin(context.Background(), c, page, user, pass)
}
