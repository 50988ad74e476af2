package proxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wharfhub/wharf/sdk"
	"github.com/wharfhub/wharf/sdk/plugin"
)

// newBackendFront serves the backend proxy behind the stand-in
// authentication, wired as the hub must wire it.
func newBackendFront(t *testing.T, providers Providers, res IdentityResolver) *httptest.Server {
	t.Helper()
	b := NewBackend(providers, res)
	srv := httptest.NewServer(WithAuthorizationPreserved(fakeAuthn(b)))
	t.Cleanup(srv.Close)
	return srv
}

func oneProvider(tr http.RoundTripper) Providers {
	return ProvidersFunc(func(name string) (Target, bool) {
		switch name {
		case "p":
			return Target{Transport: tr, PublicPaths: []string{"/agent/"}}, true
		case "down":
			return Target{}, true
		}
		return Target{}, false
	})
}

func TestBackendForwardedHeaders(t *testing.T) {
	tr, _ := startSocket(t, http.HandlerFunc(echo))
	srv := newBackendFront(t, oneProvider(tr), resolver{})

	spoofed := map[string][]string{
		"x-kedge-user":      {"mallory"},
		"X-KEDGE-GROUPS":    {"system:masters"},
		"X-Kedge-Tenant":    {"root:evil"},
		"Connection":        {"X-Kedge-Tenant, x-kedge-cluster"},
		"x-kedge-cluster":   {"evil"},
		"X-Kedge-Base-Path": {"/evil"},
		"X-Kedge-Anything":  {"x"},
		// The provider routes do not impersonate, and a provider must
		// never see what the caller asked to be.
		"Impersonate-User":                      {"mallory"},
		"impersonate-group":                     {"system:masters"},
		"IMPERSONATE-UID":                       {"mallory-uid"},
		"Impersonate-Extra-Wharf.dev%2fcluster": {"evil"},
	}
	tests := []struct {
		name   string
		path   string
		auth   string
		header map[string][]string
		cookie string
		want   http.Header // exact X-Kedge-* set seen by the provider
	}{{
		name: "spoofed headers replaced by home workspace identity",
		path: "/services/providers/p/api/x", auth: "Bearer alice-token", header: spoofed,
		want: http.Header{
			"X-Kedge-User": {"alice"}, "X-Kedge-Groups": {"dev", "system:authenticated"},
			"X-Kedge-Tenant": {"root:acme"}, "X-Kedge-Cluster": {"c0acme"},
		},
	}, {
		name: "workspace from header", path: "/services/providers/p/x", auth: "Bearer alice-token",
		header: map[string][]string{"X-Wharf-Workspace": {"root:acme:team"}}, cookie: "root:nope",
		want: http.Header{
			"X-Kedge-User": {"alice"}, "X-Kedge-Groups": {"dev", "system:authenticated"},
			"X-Kedge-Tenant": {"root:acme:team"}, "X-Kedge-Cluster": {"c1team"},
		},
	}, {
		name: "workspace from cookie", path: "/services/providers/p/x", auth: "Bearer alice-token",
		cookie: "root:acme:team",
		want: http.Header{
			"X-Kedge-User": {"alice"}, "X-Kedge-Groups": {"dev", "system:authenticated"},
			"X-Kedge-Tenant": {"root:acme:team"}, "X-Kedge-Cluster": {"c1team"},
		},
	}, {
		name: "odd authorization forwarded byte for byte", path: "/services/providers/p/x", auth: "Bearer  odd.token==",
		want: http.Header{
			"X-Kedge-User": {"bob"}, "X-Kedge-Groups": {"system:authenticated"},
			"X-Kedge-Tenant": {"root:bob"}, "X-Kedge-Cluster": {"c2bob"},
		},
	}, {
		name: "public path: no identity, spoofs stripped", path: "/services/providers/p/agent/tunnel", header: spoofed,
		want: http.Header{},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
			for k, v := range tc.header {
				req.Header[k] = v // raw keys: keep the spoofed casing on the wire
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			if tc.cookie != "" {
				req.AddCookie(&http.Cookie{Name: WorkspaceCookie, Value: tc.cookie})
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			var got seen
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if k := kedgeHeaders(got.Header); !reflect.DeepEqual(k, tc.want) {
				t.Errorf("X-Kedge-* headers\n got %v\nwant %v", k, tc.want)
			}
			if a := got.Header.Values("Authorization"); tc.auth != "" && (len(a) != 1 || a[0] != tc.auth) {
				t.Errorf("Authorization = %q, want exactly %q", a, tc.auth)
			}
			if tc.auth == "" && got.Header.Get("Authorization") != "" {
				t.Errorf("Authorization appeared from nowhere: %q", got.Header.Get("Authorization"))
			}
			for k := range got.Header {
				if strings.HasPrefix(strings.ToLower(k), "impersonate-") {
					t.Errorf("%s reached the provider: %q", k, got.Header[k])
				}
			}
			for _, c := range got.Header.Values("Connection") {
				if strings.Contains(strings.ToLower(c), "x-kedge") {
					t.Errorf("Connection still names identity: %q", c)
				}
			}
			if !strings.HasPrefix(got.Path, "/services/") {
				t.Errorf("socket path %q not under /services/", got.Path)
			}
			// The provider's own parser agrees with what was asserted.
			r := &http.Request{Header: got.Header}
			id, ok := sdk.IdentityFrom(r)
			if ok != (len(tc.want) > 0) || (ok && (id.User != tc.want.Get("X-Kedge-User") || !reflect.DeepEqual(id.Groups, tc.want.Values("X-Kedge-Groups")))) {
				t.Errorf("sdk.IdentityFrom = %+v, %v", id, ok)
			}
		})
	}
}

// TestBackendNonCanonicalInProcess feeds header map keys that net/http's
// server would have canonicalised, as another in-process filter could.
func TestBackendNonCanonicalInProcess(t *testing.T) {
	tr, _ := startSocket(t, http.HandlerFunc(echo))
	b := NewBackend(oneProvider(tr), resolver{})
	req := httptest.NewRequest(http.MethodGet, "/services/providers/p/x", nil)
	req.Header["x-kedge-user"] = []string{"mallory"}
	req.Header["X-KEDGE-GROUPS"] = []string{"system:masters"}
	req.Header["Connection"] = []string{"x-kedge-tenant"}
	req.Header["x-kedge-tenant"] = []string{"root:evil"}
	req.Header.Set("Authorization", "Bearer alice-token")
	rec := httptest.NewRecorder()
	WithAuthorizationPreserved(fakeAuthn(b)).ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var got seen
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := http.Header{
		"X-Kedge-User": {"alice"}, "X-Kedge-Groups": {"dev", "system:authenticated"},
		"X-Kedge-Tenant": {"root:acme"}, "X-Kedge-Cluster": {"c0acme"},
	}
	if k := kedgeHeaders(got.Header); !reflect.DeepEqual(k, want) {
		t.Errorf("got %v\nwant %v", k, want)
	}
	if got.Header.Get("Authorization") != "Bearer alice-token" {
		t.Errorf("Authorization = %q", got.Header.Get("Authorization"))
	}
}

func TestBackendErrors(t *testing.T) {
	tr, sock := startSocket(t, http.HandlerFunc(echo))
	gone := ProvidersFunc(func(name string) (Target, bool) {
		if name == "crashed" { // loaded, but its socket is gone
			return Target{Transport: plugin.NewSocketTransport(sock + ".gone")}, true
		}
		return oneProvider(tr).Get(name)
	})
	srv := newBackendFront(t, gone, resolver{})
	tests := []struct {
		name, path, auth, workspace string
		code                        int
		reason                      metav1.StatusReason
		retryAfter                  bool
	}{
		{name: "unknown provider", path: "/services/providers/nope/x", auth: "Bearer alice-token", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "provider down", path: "/services/providers/down/x", auth: "Bearer alice-token", code: 503, reason: metav1.StatusReasonServiceUnavailable, retryAfter: true},
		{name: "socket gone", path: "/services/providers/crashed/x", auth: "Bearer alice-token", code: 503, reason: metav1.StatusReasonServiceUnavailable, retryAfter: true},
		{name: "workspace denied", path: "/services/providers/p/x", auth: "Bearer alice-token", workspace: "root:bob", code: 403, reason: metav1.StatusReasonForbidden},
		{name: "denied before down", path: "/services/providers/down/x", auth: "Bearer alice-token", workspace: "root:bob", code: 403, reason: metav1.StatusReasonForbidden},
		{name: "no workspace", path: "/services/providers/p/x", auth: "Bearer nohome-token", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "comma in group", path: "/services/providers/p/x", auth: "Bearer comma-token", code: 403, reason: metav1.StatusReasonForbidden},
		{name: "resolver failure", path: "/services/providers/p/x", auth: "Bearer failing-token", code: 500, reason: metav1.StatusReasonInternalError},
		{name: "unauthenticated", path: "/services/providers/p/x", code: 401, reason: metav1.StatusReasonUnauthorized},
		{name: "dot segments leave public prefix", path: "/services/providers/p/agent/%2E%2E/admin", code: 401, reason: metav1.StatusReasonUnauthorized},
		{name: "escaped slash is not public", path: "/services/providers/p/agent%2Fx", code: 401, reason: metav1.StatusReasonUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			if tc.workspace != "" {
				req.Header.Set(WorkspaceHeader, tc.workspace)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var st metav1.Status
			if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
				t.Fatalf("status %d, body not a Status: %v", resp.StatusCode, err)
			}
			if resp.StatusCode != tc.code || st.Code != int32(tc.code) || st.Reason != tc.reason || st.Kind != "Status" {
				t.Errorf("got %d %+v, want %d %s", resp.StatusCode, st, tc.code, tc.reason)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if got := resp.Header.Get("Retry-After") != ""; got != tc.retryAfter {
				t.Errorf("Retry-After = %q", resp.Header.Get("Retry-After"))
			}
		})
	}
}

func TestRequestedWorkspace(t *testing.T) {
	tests := []struct{ name, header, cookie, want string }{
		{"header wins", "root:a", "root:b", "root:a"},
		{"cookie", "", "root:b", "root:b"},
		{"home", "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			if tc.header != "" {
				r.Header.Set(WorkspaceHeader, tc.header)
			}
			if tc.cookie != "" {
				r.AddCookie(&http.Cookie{Name: WorkspaceCookie, Value: tc.cookie})
			}
			if got := RequestedWorkspace(r); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
