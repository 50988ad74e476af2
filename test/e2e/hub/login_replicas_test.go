package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/wharfhub/wharf/test/idp"
)

// TestBrowserSessionAcrossReplicas: two hubs sharing one etcd share the
// login keys and session records, so a session started on one works on
// the other, and logging out on one ends it on both.
func TestBrowserSessionAcrossReplicas(t *testing.T) {
	t.Parallel()
	_, endpoints := externalEtcd(t)
	portA, portB := freePort(t), freePort(t)
	urlA, urlB := fmt.Sprintf("https://127.0.0.1:%d", portA), fmt.Sprintf("https://127.0.0.1:%d", portB)
	p := idp.StartWith(t, idp.Options{
		Clients: []idp.Client{{ID: "wharf", RedirectURIs: []string{urlA + "/auth/callback", urlB + "/auth/callback"}}},
		Users:   []idp.User{loginUser},
	})
	args := []string{"--oidc-issuer-url=" + p.URL, "--oidc-client-id=wharf", "--oidc-ca-file=" + p.CAFile, "--oidc-groups-claim=groups"}
	a := startHub(t, hubOptions{port: portA, etcdServers: endpoints, extraArgs: args})
	b := startHub(t, hubOptions{port: portB, etcdServers: endpoints, extraArgs: args})

	br := newBrowser(t, a, p, b)
	resp, err := idp.SubmitLogin(context.Background(), br.Client, br.loginPage(t, "/version"), loginUser.Username, loginUser.Password)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Host != strings.TrimPrefix(urlA, "https://") {
		t.Fatalf("login at replica A landed at %s with %d", resp.Request.URL.Redacted(), resp.StatusCode)
	}
	var session *http.Cookie
	for _, c := range br.rec.Last("/auth/callback").Cookies() {
		if c.Name == "__Host-wharf_session" {
			session = c
		}
	}
	if session == nil {
		t.Fatal("no session cookie from replica A")
	}
	// The cookie as another client sends it to either replica.
	with := func(h *hubProc, method, path string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest(method, h.URL+path, nil)
		req.AddCookie(&http.Cookie{Name: "__Host-wharf_session", Value: session.Value})
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := newBrowser(t, a, p, b).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, h := range []*hubProc{a, b} {
		if code, body := with(h, http.MethodGet, "/version", nil); code != http.StatusOK {
			t.Fatalf("session from A at %s: %d %s", h.URL, code, body)
		}
	}
	// The pre-login cookie and state used at A are refused at B.
	req, _ := http.NewRequest(http.MethodGet, urlB+br.rec.Last("/auth/callback").Request.URL.RequestURI(), nil)
	for _, c := range br.rec.Last("/auth/login").Cookies() {
		req.AddCookie(c)
	}
	if resp, err := newBrowser(t, a, p, b).Do(req); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("state used at A replayed at B: %v %v, want 400", resp.StatusCode, err)
	}
	code, body := with(b, http.MethodGet, "/auth/session", nil)
	var info struct {
		CSRFToken string `json:"csrfToken"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &info) != nil || info.CSRFToken == "" {
		t.Fatalf("/auth/session at B: %d %s", code, body)
	}
	// Logout at B (its own Origin), then neither replica accepts it.
	if code, body := with(b, http.MethodPost, "/auth/logout", map[string]string{"Origin": urlB, "X-Wharf-CSRF": info.CSRFToken}); code != http.StatusNoContent {
		t.Fatalf("logout at B: %d %s", code, body)
	}
	for _, h := range []*hubProc{a, b} {
		if code, _ := with(h, http.MethodGet, "/version", nil); code != http.StatusUnauthorized {
			t.Errorf("session after logout at %s: %d, want 401", h.URL, code)
		}
	}
}
