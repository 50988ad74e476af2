package auth

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wharfhub/wharf/providers/tenantfilter/core"
	"github.com/wharfhub/wharf/test/kube"
)

// countingReviews counts TokenReviews made against the real downstream.
type countingReviews struct {
	authv1client.TokenReviewInterface
	n atomic.Int32
}

func (c *countingReviews) Create(ctx context.Context, tr *authenticationv1.TokenReview, o metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	c.n.Add(1)
	return c.TokenReviewInterface.Create(ctx, tr, o)
}

// echoed is what the test handler behind the Authenticator saw.
type echoed struct {
	Caller  core.Caller
	Headers http.Header
}

type env struct {
	kube    *kube.Cluster
	ca      *testCA
	other   *testCA
	clock   *clocktesting.FakeClock
	reviews *countingReviews
}

func startEnv(t *testing.T) *env {
	t.Helper()
	c := kube.Start(t, kube.Options{Users: []kube.User{
		{Name: "alice", Groups: []string{"wind-owners"}},
		{Name: "imp-admin"},
	}})
	cs := c.Clientset(t)
	// imp-admin may impersonate system:masters and user carol.
	ctx := context.Background()
	_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "impersonate-some"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"carol"}},
			{APIGroups: []string{""}, Resources: []string{"groups"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"system:masters"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "impersonate-some"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "impersonate-some"},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "imp-admin"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &env{kube: c, ca: newTestCA(t, "client-ca"), other: newTestCA(t, "other-ca"),
		clock:   clocktesting.NewFakeClock(time.Now()),
		reviews: &countingReviews{TokenReviewInterface: cs.AuthenticationV1().TokenReviews()}}
}

// server runs the Authenticator on a TLS listener that requests (but does
// not require) client certificates, as the standalone listener does.
func (e *env) server(t *testing.T, cfg Config) *httptest.Server {
	t.Helper()
	cs := e.kube.Clientset(t)
	cfg.TokenReviews = e.reviews
	cfg.SubjectAccessReviews = cs.AuthorizationV1().SubjectAccessReviews()
	cfg.ClientCA = e.ca.pool
	cfg.Clock = e.clock
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(a.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := core.CallerFrom(r.Context())
		_ = json.NewEncoder(w).Encode(echoed{Caller: c, Headers: r.Header})
	})))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

type call struct {
	token  string
	cert   *tls.Certificate
	header map[string]string
}

func do(t *testing.T, srv *httptest.Server, c call) (int, echoed) {
	t.Helper()
	tr := srv.Client().Transport.(*http.Transport).Clone()
	if c.cert != nil {
		tr.TLSClientConfig.Certificates = []tls.Certificate{*c.cert}
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/namespaces", nil)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out echoed
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
	} else {
		var st metav1.Status
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.Kind != "Status" || int(st.Code) != resp.StatusCode {
			t.Fatalf("error body is not a Status: %+v %v", st, err)
		}
	}
	return resp.StatusCode, out
}

func TestAuthenticate(t *testing.T) {
	e := startEnv(t)
	alice := e.kube.Token(t, "alice")
	good := e.ca.client(t, "dave", "team-x")
	foreign := e.other.client(t, "dave", "system:masters")
	all := []Type{TLSCertificate, BearerToken, XForwardedClientCert}
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	untrusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	wsProto := "base64url.bearer.authorization.k8s.io." + base64.RawURLEncoding.EncodeToString([]byte(alice)) + ", v4.channel.k8s.io"

	tests := []struct {
		name       string
		cfg        Config
		call       call
		wantCode   int
		wantUser   string
		wantGroups []string
	}{
		{"bearer", Config{}, call{token: alice}, 200, "alice", []string{"wind-owners", "system:authenticated"}},
		{"bad bearer", Config{}, call{token: "nope"}, 401, "", nil},
		{"no credential", Config{}, call{}, 401, "", nil},
		{"websocket subprotocol", Config{}, call{header: map[string]string{
			"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
			"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Protocol": wsProto}}, 200, "alice", nil},
		{"client certificate", Config{}, call{cert: &good}, 200, "dave", []string{"team-x", "system:authenticated"}},
		{"certificate of another CA", Config{}, call{cert: &foreign}, 401, "", nil},
		{"certificate of another CA, then a token", Config{}, call{cert: &foreign, token: alice}, 200, "alice", nil},
		{"token type only ignores certificates", Config{Types: []Type{BearerToken}}, call{cert: &good}, 401, "", nil},
		{"xfcc without trusted CIDRs", Config{Types: all}, call{header: map[string]string{"X-Forwarded-Client-Cert": xfccValue(good)}}, 401, "", nil},
		{"xfcc from an untrusted peer, with a good token", Config{Types: all, TrustedProxyCIDRs: untrusted},
			call{token: alice, header: map[string]string{"X-Forwarded-Client-Cert": xfccValue(good)}}, 401, "", nil},
		{"xfcc from a trusted peer", Config{Types: all, TrustedProxyCIDRs: trusted},
			call{header: map[string]string{"X-Forwarded-Client-Cert": xfccValue(good)}}, 200, "dave", []string{"team-x", "system:authenticated"}},
		{"xfcc signed by another CA", Config{Types: all, TrustedProxyCIDRs: trusted},
			call{header: map[string]string{"X-Forwarded-Client-Cert": xfccValue(foreign)}}, 401, "", nil},
		{"xfcc last element counts", Config{Types: all, TrustedProxyCIDRs: trusted},
			call{header: map[string]string{"X-Forwarded-Client-Cert": xfccValue(good) + "," + xfccValue(foreign)}}, 401, "", nil},
		{"xfcc in a custom header", Config{Types: all, TrustedProxyCIDRs: trusted, XFCCHeader: "X-Client-Cert"},
			call{header: map[string]string{"X-Client-Cert": xfccValue(good)}}, 200, "dave", nil},
		{"xfcc type not enabled", Config{TrustedProxyCIDRs: trusted},
			call{header: map[string]string{"X-Forwarded-Client-Cert": xfccValue(good)}}, 401, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := e.server(t, tc.cfg)
			code, got := do(t, srv, tc.call)
			if code != tc.wantCode {
				t.Fatalf("code %d, want %d", code, tc.wantCode)
			}
			if code != 200 {
				return
			}
			if got.Caller.User != tc.wantUser {
				t.Errorf("user %q, want %q", got.Caller.User, tc.wantUser)
			}
			for _, g := range tc.wantGroups {
				if !slices.Contains(got.Caller.Groups, g) {
					t.Errorf("groups %v lack %q", got.Caller.Groups, g)
				}
			}
			for _, h := range []string{"Authorization", "X-Forwarded-Client-Cert", "X-Client-Cert"} {
				if v := got.Headers.Get(h); v != "" {
					t.Errorf("credential header %s forwarded: %q", h, v)
				}
			}
			if p := got.Headers.Get("Sec-Websocket-Protocol"); strings.Contains(p, "bearer") {
				t.Errorf("bearer subprotocol forwarded: %q", p)
			}
		})
	}
}

func TestTokenCache(t *testing.T) {
	e := startEnv(t)
	srv := e.server(t, Config{})
	alice := e.kube.Token(t, "alice")
	before := e.reviews.n.Load()
	for range 5 {
		if code, _ := do(t, srv, call{token: alice}); code != 200 {
			t.Fatalf("code %d", code)
		}
	}
	if n := e.reviews.n.Load() - before; n != 1 {
		t.Fatalf("%d TokenReviews for 5 requests with one token, want 1", n)
	}
	e.clock.Step(DefaultSuccessTTL + time.Second)
	do(t, srv, call{token: alice})
	if n := e.reviews.n.Load() - before; n != 2 {
		t.Fatalf("%d TokenReviews after the TTL, want 2", n)
	}
	// Failures are cached for the shorter TTL.
	before = e.reviews.n.Load()
	do(t, srv, call{token: "bad"})
	do(t, srv, call{token: "bad"})
	if n := e.reviews.n.Load() - before; n != 1 {
		t.Fatalf("%d TokenReviews for a repeated bad token, want 1", n)
	}
	e.clock.Step(DefaultFailureTTL + time.Second)
	do(t, srv, call{token: "bad"})
	if n := e.reviews.n.Load() - before; n != 2 {
		t.Fatalf("%d TokenReviews after the failure TTL, want 2", n)
	}
}

func TestXFCCExpired(t *testing.T) {
	e := startEnv(t)
	srv := e.server(t, Config{Types: []Type{XForwardedClientCert}, TrustedProxyCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	good := e.ca.client(t, "dave")
	hdr := map[string]string{"X-Forwarded-Client-Cert": xfccValue(good)}
	if code, _ := do(t, srv, call{header: hdr}); code != 200 {
		t.Fatalf("fresh certificate: %d", code)
	}
	e.clock.Step(2 * time.Hour)
	if code, _ := do(t, srv, call{header: hdr}); code != 401 {
		t.Fatalf("expired certificate: %d, want 401", code)
	}
}

func TestClientImpersonation(t *testing.T) {
	e := startEnv(t)
	srv := e.server(t, Config{})
	alice, admin := e.kube.Token(t, "alice"), e.kube.Token(t, "imp-admin")
	tests := []struct {
		name       string
		token      string
		header     map[string]string
		wantUser   string
		wantGroups []string
	}{
		{"without the right: stripped", alice, map[string]string{"Impersonate-User": "carol", "Impersonate-Group": "system:masters"},
			"alice", []string{"wind-owners", "system:authenticated"}},
		{"group without user: stripped", alice, map[string]string{"Impersonate-Group": "system:masters"},
			"alice", []string{"wind-owners", "system:authenticated"}},
		{"with the right: honoured", admin, map[string]string{"Impersonate-User": "carol", "Impersonate-Group": "system:masters"},
			"carol", []string{"system:masters", "system:authenticated"}},
		{"one group without the right: all stripped", admin, map[string]string{"Impersonate-User": "carol", "Impersonate-Group": "system:nodes"},
			"imp-admin", []string{"system:authenticated"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, got := do(t, srv, call{token: tc.token, header: tc.header})
			if got.Caller.User != tc.wantUser || !slices.Equal(got.Caller.Groups, tc.wantGroups) {
				t.Fatalf("caller %+v, want %s %v", got.Caller, tc.wantUser, tc.wantGroups)
			}
			for k := range got.Headers {
				if strings.HasPrefix(k, "Impersonate-") {
					t.Errorf("client header %s reached the core", k)
				}
			}
		})
	}
	// SkipImpersonationReview honours anything (dangerous by design).
	skip := e.server(t, Config{SkipImpersonationReview: true})
	_, got := do(t, skip, call{token: alice, header: map[string]string{"Impersonate-User": "carol", "Impersonate-Group": "system:masters"}})
	if got.Caller.User != "carol" || !slices.Contains(got.Caller.Groups, "system:masters") {
		t.Fatalf("SkipImpersonationReview: %+v", got.Caller)
	}
}

func TestHeadersDeleted(t *testing.T) {
	e := startEnv(t)
	srv := e.server(t, Config{})
	_, got := do(t, srv, call{token: e.kube.Token(t, "alice"), header: map[string]string{
		"Impersonate-Extra-Scopes": "admin",
		"Connection":               "X-Secret-Hop, Impersonate-User",
		"X-Secret-Hop":             "1",
		"X-Kept":                   "yes",
	}})
	for _, h := range []string{"Impersonate-Extra-Scopes", "X-Secret-Hop", "Connection"} {
		if _, ok := got.Headers[h]; ok {
			t.Errorf("%s reached the core: %v", h, got.Headers[h])
		}
	}
	if got.Headers.Get("X-Kept") != "yes" {
		t.Errorf("an ordinary header was dropped: %v", got.Headers)
	}
	if got.Caller.User != "alice" || len(got.Caller.Extra) != 0 {
		t.Errorf("caller %+v", got.Caller)
	}
}
