package login_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"

	"github.com/wharfhub/wharf/hub/authn"
	"github.com/wharfhub/wharf/hub/login"
	"github.com/wharfhub/wharf/test/idp"
)

var ada = idp.User{Username: "ada", Password: "lovelace", Email: "ada@example.com", Groups: []string{"dev", "ops"}}

// hubEnv is the login handler in front of a stand-in API that answers
// with the authenticated identity, against a real IdP and a real etcd.
type hubEnv struct {
	url  string
	idp  *idp.IdP
	pool *x509.CertPool
	auth authenticator.Request
}

type envOptions struct {
	idTokenLifetime time.Duration
	loginArgs       []string
}

func startEnv(t *testing.T, o envOptions) *hubEnv {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var h http.Handler
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	p := idp.StartWith(t, idp.Options{
		Clients:         []idp.Client{{ID: "wharf", RedirectURIs: []string{srv.URL + login.CallbackPath}}},
		Users:           []idp.User{ada},
		IDTokenLifetime: o.idTokenLifetime,
	})
	ao := authn.NewOptions()
	lo := login.NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	ao.AddFlags(fs)
	lo.AddFlags(fs)
	args := append([]string{"--oidc-issuer-url=" + p.URL, "--oidc-client-id=wharf", "--oidc-ca-file=" + p.CAFile, "--oidc-groups-claim=groups"}, o.loginArgs...)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	l, err := login.New(login.Config{
		Options: lo, ExternalURL: srv.URL, Etcd: login.TestEtcd(t), EtcdPrefix: "/registry",
		StateKey: login.TestKey(t), SessionKey: login.TestKey(t),
		OIDC: &login.OIDC{IssuerURL: p.URL, ClientID: "wharf", CAData: ca},
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := ao.Authenticator(ctx, nil, l.Sessions())
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return a.HealthCheck() == nil, nil
	}); err != nil {
		t.Fatal("OIDC discovery never succeeded")
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, _ := a.AuthenticateRequest(r)
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"user": resp.User.GetName(), "groups": resp.User.GetGroups(), "method": r.Method})
	})
	h = l.Handler(api, login.Deps{IDTokens: a.OIDC()})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	pool.AppendCertsFromPEM(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	return &hubEnv{url: srv.URL, idp: p, pool: pool, auth: a}
}

type browser struct {
	*http.Client
	rec *idp.Recorder
	env *hubEnv
}

func (e *hubEnv) browser() *browser {
	jar, _ := cookiejar.New(nil)
	rec := &idp.Recorder{RT: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.pool}}}
	return &browser{Client: &http.Client{Jar: jar, Transport: rec, Timeout: 30 * time.Second}, rec: rec, env: e}
}

// login runs the browser flow to the end and returns the final response.
func (b *browser) login(t *testing.T, then string) *http.Response {
	t.Helper()
	resp, err := b.Get(b.env.url + login.LoginPath + "?then=" + url.QueryEscape(then))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/login" {
		t.Fatalf("expected the IdP's login page, got %d at %s", resp.StatusCode, resp.Request.URL)
	}
	resp, err = idp.SubmitLogin(context.Background(), b.Client, resp.Request.URL.String(), ada.Username, ada.Password)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (b *browser) do(t *testing.T, method, path string, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, b.env.url+path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func sessionCookieOf(t *testing.T, resp *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == login.SessionCookie {
			return c
		}
	}
	t.Fatalf("no %s cookie set by %s", login.SessionCookie, resp.Request.URL.Path)
	return nil
}

// stopAtCallback is a browser that does not follow the IdP's redirect
// back to the hub, so the test holds the callback URL.
func (b *browser) stopAtCallback() {
	b.CheckRedirect = func(r *http.Request, _ []*http.Request) error {
		if r.URL.Path == login.CallbackPath {
			return http.ErrUseLastResponse
		}
		return nil
	}
}
