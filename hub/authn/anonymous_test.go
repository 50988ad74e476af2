package authn_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/request"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/wharfhub/wharf/hub/authn"
	"github.com/wharfhub/wharf/hub/cluster"
)

const sessionCookie = "wharf_session"

// anonHandler is the hub's authenticator shape behind upstream's
// authentication filter: the union of static tokens (no session
// authenticator, so a cookie is a credential nobody recognises), then the
// anonymous health probes. The handler answers with the caller's name.
func anonHandler(t *testing.T) http.Handler {
	t.Helper()
	static, err := authn.StaticTokens(adminToken, adminInfo, "")
	if err != nil {
		t.Fatal(err)
	}
	explicit := func(ctx context.Context) bool {
		tg, ok := cluster.TargetFrom(ctx)
		return !ok || tg.Explicit
	}
	a := authn.WithAnonymousHealth(authn.New(authn.Sources{Static: static}),
		authn.AnonymousHealth{SessionCookie: sessionCookie, Explicit: explicit})
	who := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := request.UserFrom(r.Context())
		_, _ = w.Write([]byte(u.GetName() + " " + strings.Join(u.GetGroups(), ",")))
	})
	h := genericapifilters.WithAuthentication(who, a, genericapifilters.Unauthorized(clientgoscheme.Codecs), nil, nil)
	return genericapifilters.WithRequestInfo(h, &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")})
}

// TestAnonymousHealth: only credential-free GET and HEAD of the health
// paths and their clean sub-paths, addressing no workspace, are
// anonymous; everything else is the same generic 401 as without the
// anonymous authenticator.
func TestAnonymousHealth(t *testing.T) {
	h := anonHandler(t)
	const anon = user.Anonymous + " " + user.AllUnauthenticated
	root := cluster.Target{Raw: string(cluster.RootPath)}
	// The 401 every refused request must answer byte for byte: an
	// anonymous request to an ordinary path, as before this change.
	unauthorized := func() string {
		r := httptest.NewRequest(http.MethodGet, "/api", nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r.WithContext(cluster.WithTarget(r.Context(), root)))
		if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), `"kind":"Status"`) {
			t.Fatalf("GET /api anonymously: %d %s", w.Code, w.Body.String())
		}
		return w.Body.String()
	}()

	peerCert := &tls.ConnectionState{PeerCertificates: []*x509.Certificate{{}}}
	for _, tc := range []struct {
		name, method, target string
		header               map[string]string
		noTarget, explicit   bool
		tls                  *tls.ConnectionState
		want                 string // body; "" means the generic 401
	}{
		{name: "GET /readyz", method: "GET", target: "/readyz", want: anon},
		{name: "GET /livez", method: "GET", target: "/livez", want: anon},
		{name: "GET /healthz", method: "GET", target: "/healthz", want: anon},
		{name: "HEAD /readyz", method: "HEAD", target: "/readyz", want: anon},
		{name: "verbose", method: "GET", target: "/readyz?verbose", want: anon},
		{name: "exclude", method: "GET", target: "/livez?exclude=etcd&verbose", want: anon},
		{name: "percent-encoded letter is the same path", method: "GET", target: "/%72eadyz", want: anon},
		{name: "admin token stays admin", method: "GET", target: "/readyz", header: map[string]string{"Authorization": "Bearer " + adminToken},
			want: "wharf-admin system:masters,system:authenticated"},

		{name: "POST /readyz", method: "POST", target: "/readyz"},
		{name: "PUT /livez", method: "PUT", target: "/livez"},
		{name: "OPTIONS /healthz", method: "OPTIONS", target: "/healthz"},
		{name: "bad token on /readyz", method: "GET", target: "/readyz", header: map[string]string{"Authorization": "Bearer nope"}},
		{name: "empty Authorization on /readyz", method: "GET", target: "/readyz", header: map[string]string{"Authorization": ""}},
		{name: "basic auth on /readyz", method: "GET", target: "/readyz", header: map[string]string{"Authorization": "Basic YTpi"}},
		{name: "unrecognised session cookie on /readyz", method: "GET", target: "/readyz", header: map[string]string{"Cookie": sessionCookie + "=forged"}},
		{name: "client certificate on /readyz", method: "GET", target: "/readyz", tls: peerCert},
		{name: "/clusters/<x>/readyz", method: "GET", target: "/readyz", explicit: true},
		{name: "no target recorded fails closed", method: "GET", target: "/readyz", noTarget: true},
		{name: "check sub-path (authorization refuses it)", method: "GET", target: "/readyz/etcd", want: anon},
		{name: "livez ping (authorization refuses it)", method: "GET", target: "/livez/ping", want: anon},
		{name: "HEAD sub-path", method: "HEAD", target: "/healthz/ping", want: anon},
		{name: "traversal out of a sub-path", method: "GET", target: "/readyz/etcd/../../metrics"},
		{name: "trailing slash", method: "GET", target: "/readyz/"},
		{name: "double slash", method: "GET", target: "//readyz"},
		{name: "dot segment", method: "GET", target: "/./readyz"},
		{name: "traversal", method: "GET", target: "/readyz/../metrics"},
		{name: "encoded traversal", method: "GET", target: "/readyz/%2e%2e/metrics"},
		{name: "encoded slash", method: "GET", target: "/readyz%2f..%2fmetrics"},
		{name: "upper case", method: "GET", target: "/READYZ"},
		{name: "suffix", method: "GET", target: "/readyzx"},
		{name: "metrics", method: "GET", target: "/metrics"},
		{name: "debug", method: "GET", target: "/debug/pprof/"},
		{name: "version", method: "GET", target: "/version"},
		{name: "api", method: "GET", target: "/api/v1/namespaces"},
		{name: "index", method: "GET", target: "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			r.TLS = tc.tls
			if !tc.noTarget {
				tg := root
				if tc.explicit {
					tg = cluster.Target{Raw: "root:acme", Explicit: true}
				}
				r = r.WithContext(cluster.WithTarget(r.Context(), tg))
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if tc.want == "" {
				if w.Code != http.StatusUnauthorized || w.Body.String() != unauthorized {
					t.Fatalf("%d %q, want the generic 401 %q", w.Code, w.Body.String(), unauthorized)
				}
				return
			}
			if w.Code != http.StatusOK || w.Body.String() != tc.want {
				t.Fatalf("%d %q, want 200 %q", w.Code, w.Body.String(), tc.want)
			}
		})
	}
}
