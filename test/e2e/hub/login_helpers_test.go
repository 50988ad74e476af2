package hub

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/wharfhub/wharf/test/idp"
)

var loginUser = idp.User{Username: "ada", Password: "lovelace", Email: "ada@example.com", Groups: []string{"dev", "ops"}}

const cliRedirect = "http://127.0.0.1:47001/callback"

// loginHub starts an IdP with the hub's confidential client and the CLI's
// public one, and a hub configured for both, with token login enabled.
func loginHub(t *testing.T, extraArgs ...string) (*hubProc, *idp.IdP) {
	t.Helper()
	port := freePort(t)
	hubURL := fmt.Sprintf("https://127.0.0.1:%d", port)
	p := idp.StartWith(t, idp.Options{
		Clients: []idp.Client{
			{ID: "wharf", Secret: "hub-client-secret", RedirectURIs: []string{hubURL + "/auth/callback"}},
			{ID: "wharf-cli", RedirectURIs: []string{"http://127.0.0.1/callback"}},
		},
		Users: []idp.User{loginUser},
	})
	secret := filepath.Join(t.TempDir(), "client-secret")
	if err := os.WriteFile(secret, []byte("hub-client-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{
		"--oidc-issuer-url=" + p.URL, "--oidc-client-id=wharf", "--oidc-ca-file=" + p.CAFile,
		"--oidc-client-secret-file=" + secret, "--oidc-cli-client-id=wharf-cli",
		"--oidc-groups-claim=groups", "--enable-token-login", "-v=4",
	}, extraArgs...)
	h := startHub(t, hubOptions{port: port, extraArgs: args})
	return h, p
}

// webBrowser is a client with a cookie jar trusting the hub and the IdP.
type webBrowser struct {
	*http.Client
	rec *idp.Recorder
	h   *hubProc
}

func newBrowser(t *testing.T, h *hubProc, p *idp.IdP, more ...*hubProc) *webBrowser {
	t.Helper()
	pool := x509.NewCertPool()
	files := []string{filepath.Join(h.opts.dataDir, "pki", "serving.crt"), p.CAFile}
	for _, o := range more {
		files = append(files, filepath.Join(o.opts.dataDir, "pki", "serving.crt"))
	}
	for _, f := range files {
		pem, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pool.AppendCertsFromPEM(pem)
	}
	jar, _ := cookiejar.New(nil)
	rec := &idp.Recorder{RT: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return &webBrowser{Client: &http.Client{Jar: jar, Transport: rec, Timeout: 30 * time.Second}, rec: rec, h: h}
}

// loginPage follows /auth/login to the IdP's login form and returns its URL.
func (b *webBrowser) loginPage(t *testing.T, then string) string {
	t.Helper()
	resp, err := b.Get(b.h.URL + "/auth/login?then=" + url.QueryEscape(then))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/login" {
		t.Fatalf("/auth/login: %d at %s, want the IdP login form", resp.StatusCode, resp.Request.URL.Redacted())
	}
	return resp.Request.URL.String()
}

func (b *webBrowser) call(t *testing.T, method, path, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, b.h.URL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// cliIDToken gets an ID token for the CLI's public client straight from
// the IdP (code flow with PKCE and a loopback redirect, as the CLI does).
func cliIDToken(t *testing.T, h *hubProc, p *idp.IdP) string {
	t.Helper()
	b := newBrowser(t, h, p)
	ctx := oidc.ClientContext(context.Background(), b.Client)
	prov, err := oidc.NewProvider(ctx, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg := oauth2.Config{ClientID: "wharf-cli", Endpoint: prov.Endpoint(), RedirectURL: cliRedirect, Scopes: []string{"openid", "email", "groups"}}
	verifier := oauth2.GenerateVerifier()
	b.CheckRedirect = func(r *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(r.URL.String(), cliRedirect) {
			return http.ErrUseLastResponse
		}
		return nil
	}
	resp, err := b.Get(cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = idp.SubmitLogin(ctx, b.Client, resp.Request.URL.String(), loginUser.Username, loginUser.Password)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, b.Client), loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		t.Fatal("no ID token from the IdP")
	}
	return raw
}
