package ha

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wharfhub/wharf/test/idp"
)

// soakUser logs in at the bed's IdP, in the browser and with the CLI.
var soakUser = idp.User{Username: "ada", Password: "lovelace", Email: "ada@example.com", Groups: []string{"dev"}}

// bedIdP is the bed's OpenID provider (the zitadel op test IdP) with the
// hub's confidential client and the CLI's public one.
type bedIdP struct {
	*idp.IdP
	hubArgs []string
}

// startBedIdP serves the IdP for replicas reached at lbURL: the hub's
// redirect URI is the load balancer's, as it is their --external-url.
func startBedIdP(t *testing.T, lbURL string) *bedIdP {
	t.Helper()
	const secret = "ha-hub-client-secret"
	p := idp.StartWith(t, idp.Options{
		Clients: []idp.Client{
			{ID: "wharf", Secret: secret, RedirectURIs: []string{lbURL + "/auth/callback"}},
			{ID: "wharf-cli", RedirectURIs: []string{"http://127.0.0.1/callback"}},
		},
		Users: []idp.User{soakUser},
	})
	file := filepath.Join(t.TempDir(), "oidc-client-secret")
	writeFile(t, file, []byte(secret+"\n"))
	return &bedIdP{IdP: p, hubArgs: []string{
		"--oidc-issuer-url=" + p.URL, "--oidc-client-id=wharf", "--oidc-ca-file=" + p.CAFile,
		"--oidc-client-secret-file=" + file, "--oidc-cli-client-id=wharf-cli", "--oidc-groups-claim=groups",
		// The portal's token sign-in (POST /auth/token-session), off by
		// default once an issuer is set.
		"--enable-token-login",
		// Every client of the bed is 127.0.0.1 and haproxy passes TCP
		// through, so the hubs see the whole soak as one address: the
		// default 1/s would refuse the soak's own logins with 429.
		"--login-rate-limit=20", "--login-rate-burst=40",
	}}
}

// logins is what the soak's login loops share: one connection pool for
// every browser (a client per login would leave idle connections open on
// the hubs), and the workspace ada may read.
type logins struct {
	b  *bed
	ws string
	tr *http.Transport
}

// newLogins grants ada view and workspace access in ws and waits until both replicas' RBAC
// says so, so the first login does not race the binding.
func (b *bed) newLogins(ctx context.Context, t *testing.T, ws string) *logins {
	t.Helper()
	admin, err := kubernetes.NewForConfig(b.restConfig(b.lb.URL, ws))
	if err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "soak-ada-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: soakUser.Email}},
	}
	if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding view to %s in %s: %v", soakUser.Email, ws, err)
	}
	// The provider routes act in a workspace only for who has kcp's
	// "access" on "/" there.
	cr := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "soak-workspace-access"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/"}, Verbs: []string{"access"}}},
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("workspace access role in %s: %v", ws, err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "soak-ada-access"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
		Subjects:   rb.Subjects,
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding workspace access to %s in %s: %v", soakUser.Email, ws, err)
	}
	for _, h := range b.hubs {
		hc, err := kubernetes.NewForConfig(b.restConfig(h.URL, ws))
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range []authorizationv1.SubjectAccessReviewSpec{
			{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "list", Resource: "configmaps"}},
			{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/", Verb: "access"}},
		} {
			spec.User, spec.Groups = soakUser.Email, []string{"system:authenticated"}
			waitFor(t, time.Minute, func() error {
				r, err := hc.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
				if err != nil {
					return err
				}
				if !r.Status.Allowed {
					return fmt.Errorf("%s: %s not yet allowed %+v %+v in %s", h.Name, soakUser.Email, spec.ResourceAttributes, spec.NonResourceAttributes, ws)
				}
				return nil
			})
		}
	}
	pool, err := poolOf(b.ca.CAFile, b.idp.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: tlsConfig(pool), MaxIdleConnsPerHost: 4}
	t.Cleanup(tr.CloseIdleConnections)
	return &logins{b: b, ws: ws, tr: tr}
}

// waitFor polls f until it succeeds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// poolOf trusts the PEM certificates in files.
func poolOf(files ...string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	for _, f := range files {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading CA: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no certificate in %s", f)
		}
	}
	return pool, nil
}

func tlsConfig(pool *x509.CertPool) *tls.Config { return &tls.Config{RootCAs: pool} }

// browser is a fresh cookie jar on the shared pool.
func (lg *logins) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Transport: lg.tr, Timeout: 30 * time.Second}
}

// paced runs one login kind until ctx ends, pause apart: each login is
// an op, each failure an error.
func paced(ctx context.Context, l *ledger, kind string, pause time.Duration, f func(context.Context) error) {
	for ctx.Err() == nil {
		err := f(ctx)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			l.fail(kind, nil, err)
		default:
			l.ok(kind)
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
}

// call sends one request as the browser c and returns status and body.
func (lg *logins) call(ctx context.Context, c *http.Client, method, path string, hdr map[string]string, cookie *http.Cookie) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, lg.b.lb.URL+path, nil)
	if err != nil {
		return 0, "", err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body), err
}

// sessionInfo is GET /auth/session's answer.
type sessionInfo struct {
	User      string `json:"user"`
	CSRFToken string `json:"csrfToken"`
}

// useSession checks that the session cookie in c's jar is wantUser's, reads
// through it (the API in ws, and paths), logs out with the CSRF defence,
// and checks the session cookie is refused afterwards.
func (lg *logins) useSession(ctx context.Context, c *http.Client, wantUser string, paths ...string) error {
	code, body, err := lg.call(ctx, c, http.MethodGet, "/auth/session", nil, nil)
	if err != nil {
		return fmt.Errorf("/auth/session: %w", err)
	}
	var info sessionInfo
	if err := json.Unmarshal([]byte(body), &info); code != http.StatusOK || err != nil || info.User != wantUser || info.CSRFToken == "" {
		return fmt.Errorf("/auth/session: %d user %q (want %q), csrf token set %v, %v", code, info.User, wantUser, info.CSRFToken != "", err)
	}
	session := sessionCookie(c, lg.b.lb.URL)
	if session == nil {
		return errors.New("no __Host-wharf_session cookie in the jar")
	}
	for _, p := range paths {
		if code, body, err := lg.call(ctx, c, http.MethodGet, p, map[string]string{"X-Wharf-Workspace": lg.ws}, nil); err != nil || code != http.StatusOK {
			return fmt.Errorf("GET %s with the session: %d %.200s %v", p, code, body, err)
		}
	}
	csrf := map[string]string{"Origin": lg.b.lb.URL, "X-Wharf-CSRF": info.CSRFToken}
	if code, body, err := lg.call(ctx, c, http.MethodPost, "/auth/logout", csrf, nil); err != nil || code != http.StatusNoContent {
		return fmt.Errorf("logout: %d %.200s %v", code, body, err)
	}
	// The cookie as someone who kept it presents it: dead on whichever
	// replica answers.
	if code, _, err := lg.call(ctx, &http.Client{Transport: lg.tr, Timeout: 30 * time.Second}, http.MethodGet, "/auth/session", nil, session); err != nil || code != http.StatusUnauthorized {
		return fmt.Errorf("session after logout: %d %v, want 401", code, err)
	}
	return nil
}

func sessionCookie(c *http.Client, base string) *http.Cookie {
	req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
	for _, ck := range c.Jar.Cookies(req.URL) {
		if ck.Name == "__Host-wharf_session" {
			return ck
		}
	}
	return nil
}

// browserLogin is the hub's OIDC login as a browser does it through the
// load balancer: /auth/login, the IdP's form, the callback (on either
// replica), landing on then; the session then reads the API and
// singleprobe and is logged out.
func (lg *logins) browserLogin(ctx context.Context) error {
	c := lg.browser()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, lg.b.lb.URL+"/auth/login?then=/version", nil)
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("/auth/login: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/login" {
		return fmt.Errorf("/auth/login: %d at %s, want the IdP's login form", resp.StatusCode, resp.Request.URL.Redacted())
	}
	resp, err = idp.SubmitLogin(ctx, c, resp.Request.URL.String(), soakUser.Username, soakUser.Password)
	if err != nil {
		return err
	}
	landing, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/version" || !strings.Contains(string(landing), "gitVersion") {
		return fmt.Errorf("login landed at %s: %d %.200s", resp.Request.URL.Redacted(), resp.StatusCode, landing)
	}
	return lg.useSession(ctx, c, soakUser.Email,
		"/clusters/"+lg.ws+"/api/v1/namespaces/default/configmaps?limit=5",
		"/services/providers/singleprobe/whoami")
}

// tokenSession is the portal's token sign-in: POST /auth/token-session
// with a static token (haproxy's check user, not an administrator), then
// the same session checks.
func (lg *logins) tokenSession(ctx context.Context) error {
	c := lg.browser()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, lg.b.lb.URL+"/auth/token-session", strings.NewReader("token="+checkToken))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", lg.b.lb.URL)
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("/auth/token-session: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("/auth/token-session: %s", resp.Status)
	}
	return lg.useSession(ctx, c, "ha-check", "/version")
}
