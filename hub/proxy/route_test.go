package proxy

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"k8s.io/component-base/metrics/testutil"
)

func TestSplitRouteAndPublic(t *testing.T) {
	public := []string{"/agent/"}
	tests := []struct {
		name, rawURL, rest, rawRest string
		public, wantErr             bool
	}{
		{name: "plain", rawURL: "/services/providers/p/a/b", rest: "/a/b"},
		{name: "root", rawURL: "/services/providers/p", rest: "/"},
		{name: "trailing slash kept", rawURL: "/services/providers/p/a/", rest: "/a/"},
		{name: "public", rawURL: "/services/providers/p/agent/x", rest: "/agent/x", public: true},
		{name: "public prefix itself", rawURL: "/services/providers/p/agent/", rest: "/agent/", public: true},
		{name: "dot segments cleaned out of public", rawURL: "/services/providers/p/agent/../admin", rest: "/admin"},
		{name: "escaped dots cleaned", rawURL: "/services/providers/p/agent/%2e%2e/admin", rest: "/admin"},
		{name: "escaped slash keeps raw, not public", rawURL: "/services/providers/p/agent%2Fx", rest: "/agent/x", rawRest: "/agent%2Fx"},
		{name: "escaped slash with dots drops raw", rawURL: "/services/providers/p/agent/x%2F..%2F..%2Fadmin", rest: "/admin"},
		{name: "double slash", rawURL: "/services/providers/p//agent/x", rest: "/agent/x", public: true},
		{name: "no name", rawURL: "/services/providers/", wantErr: true},
		{name: "other prefix", rawURL: "/ui/providers/p/x", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, err := url.Parse(tc.rawURL)
			if err != nil {
				t.Fatal(err)
			}
			rt, err := splitRoute(u, BackendPrefix)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				return
			}
			if rt.name != "p" || rt.rest != tc.rest || rt.rawRest != tc.rawRest {
				t.Errorf("got %+v, want rest %q raw %q", rt, tc.rest, tc.rawRest)
			}
			if got := isPublic(rt, public); got != tc.public {
				t.Errorf("public = %v", got)
			}
		})
	}
}

func TestFileLike(t *testing.T) {
	tests := map[string]bool{
		"/main.js": true, "/assets/x-abc123.js": true, "/icon.svg": true,
		"/": false, "/some/route": false, "/v1.2/route": false, "/x.js/": false,
	}
	for p, want := range tests {
		if got := fileLike(p); got != want {
			t.Errorf("fileLike(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestBackendMetrics(t *testing.T) {
	tr, _ := startSocket(t, http.HandlerFunc(echo))
	// The counter is written when the handler returns, which may be after
	// the client has read the response: wait for the handler each time.
	served := make(chan struct{}, 1)
	b := WithAuthorizationPreserved(fakeAuthn(NewBackend(oneProvider(tr), resolver{})))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { served <- struct{}{} }()
		b.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	count := func(provider, code string) float64 {
		v, err := testutil.GetCounterMetricValue(providerRequests.WithLabelValues(provider, code))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ok0, down0, denied0 := count("p", "200"), count("down", "503"), count("p", "403")
	for _, c := range []struct{ path, ws string }{
		{"/services/providers/p/x", ""},
		{"/services/providers/down/x", ""},
		{"/services/providers/p/x", "root:bob"},
		{"/services/providers/unknown/x", ""},
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+c.path, nil)
		req.Header.Set("Authorization", "Bearer alice-token")
		if c.ws != "" {
			req.Header.Set(WorkspaceHeader, c.ws)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		<-served
	}
	if d := count("p", "200") - ok0; d != 1 {
		t.Errorf("p 200 delta %v", d)
	}
	if d := count("down", "503") - down0; d != 1 {
		t.Errorf("down 503 delta %v", d)
	}
	if d := count("p", "403") - denied0; d != 1 {
		t.Errorf("p 403 delta %v", d)
	}
	if v := count("unknown", "404"); v != 0 {
		t.Errorf("unknown provider got a series: %v", v)
	}
}
