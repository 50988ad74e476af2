package testkit_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/wharfhub/wharf/sdk"
	"github.com/wharfhub/wharf/sdk/testkit"
)

// echo is a provider whose backend reports exactly what it received.
type echo struct{}

var _ sdk.Provider = echo{}

type seen struct {
	Headers       map[string][]string `json:"headers"` // every X-Kedge-* header
	Identity      sdk.Identity        `json:"identity"`
	Authenticated bool                `json:"authenticated"`
	Authorization string              `json:"authorization"`
	CallerHost    string              `json:"callerHost"`
	CallerToken   string              `json:"callerToken"`
	CallerErr     string              `json:"callerErr"`
	Path          string              `json:"path"`
}

func (echo) Manifest() sdk.Manifest {
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{Headers: map[string][]string{}, Authorization: r.Header.Get("Authorization"), Path: r.URL.Path}
		for k, v := range r.Header {
			if strings.HasPrefix(strings.ToLower(k), "x-kedge-") {
				s.Headers[k] = v
			}
		}
		s.Identity, s.Authenticated = sdk.IdentityFrom(r)
		if cfg, err := sdk.CallerConfig(r); err != nil {
			s.CallerErr = err.Error()
		} else {
			s.CallerHost, s.CallerToken = cfg.Host, cfg.BearerToken
		}
		_ = json.NewEncoder(w).Encode(s)
	})
	ui := http.FileServerFS(fstest.MapFS{"main.js": {Data: []byte("console.log(1)")}})
	return sdk.Manifest{
		Name:        "echo",
		Version:     "v1",
		Backend:     backend,
		PublicPaths: []string{"/public/"},
		UIHandler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Seen-Base-Path", r.Header.Get(sdk.HeaderBasePath))
			w.Header().Set("X-Seen-Authorization", r.Header.Get("Authorization"))
			ui.ServeHTTP(w, r)
		}),
	}
}

var alice = sdk.Identity{User: "alice", Groups: []string{"devs", "system:authenticated"}, Tenant: "root:acme", Cluster: "2x9abc"}

func do(t *testing.T, hub *testkit.Hub, url string, hdr http.Header) (int, seen, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v // raw: keep the test's own casing
	}
	resp, err := hub.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var s seen
	if resp.StatusCode == http.StatusOK && strings.HasPrefix(body2str(body), "{") {
		if err := json.Unmarshal(body, &s); err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
	}
	return resp.StatusCode, s, resp.Header
}

func body2str(b []byte) string { return strings.TrimSpace(string(b)) }

func TestIdentityIsStrippedAndReasserted(t *testing.T) {
	hub := testkit.Start(t, echo{}, testkit.Options{Users: map[string]sdk.Identity{"alice-token": alice}})

	spoofs := []struct {
		name string
		hdr  http.Header
	}{
		{name: "canonical", hdr: http.Header{"X-Kedge-User": {"mallory"}, "X-Kedge-Groups": {"system:masters"}}},
		{name: "lower case", hdr: http.Header{"x-kedge-user": {"mallory"}, "x-kedge-tenant": {"root:evil"}}},
		{name: "upper case", hdr: http.Header{"X-KEDGE-CLUSTER": {"evil"}, "X-KEDGE-GROUPS": {"system:masters"}}},
		{name: "unknown x-kedge header", hdr: http.Header{"X-Kedge-Impersonate": {"root"}, "X-Kedge-Base-Path": {"/evil"}}},
		{name: "named in Connection", hdr: http.Header{"Connection": {"X-Kedge-User, x-kedge-tenant"}, "X-Kedge-User": {"mallory"}}},
	}
	for _, tt := range spoofs {
		t.Run(tt.name, func(t *testing.T) {
			hdr := tt.hdr.Clone()
			hdr["Authorization"] = []string{"Bearer alice-token"}
			code, s, _ := do(t, hub, hub.BackendURL("/whoami?x=1"), hdr)
			if code != http.StatusOK {
				t.Fatalf("status %d", code)
			}
			if !s.Authenticated || s.Identity.User != alice.User || s.Identity.Tenant != alice.Tenant ||
				s.Identity.Cluster != alice.Cluster || strings.Join(s.Identity.Groups, ",") != strings.Join(alice.Groups, ",") {
				t.Fatalf("identity = %+v, want %+v", s.Identity, alice)
			}
			want := map[string]bool{sdk.HeaderUser: true, sdk.HeaderGroups: true, sdk.HeaderTenant: true, sdk.HeaderCluster: true}
			for k, v := range s.Headers {
				if !want[k] {
					t.Errorf("spoofed header %s: %v reached the provider", k, v)
				}
			}
			if len(s.Headers[sdk.HeaderUser]) != 1 {
				t.Errorf("X-Kedge-User values = %v, want exactly one", s.Headers[sdk.HeaderUser])
			}
			if s.Authorization != "Bearer alice-token" {
				t.Errorf("Authorization = %q, want forwarded untouched", s.Authorization)
			}
			if s.Path != "/whoami" {
				t.Errorf("provider saw path %q, want prefix stripped", s.Path)
			}
			if s.CallerHost != hub.URL+"/clusters/root:acme" || s.CallerToken != "alice-token" || s.CallerErr != "" {
				t.Errorf("caller config = %q %q %q", s.CallerHost, s.CallerToken, s.CallerErr)
			}
		})
	}
}

func TestAuthAndPublicPaths(t *testing.T) {
	hub := testkit.Start(t, echo{}, testkit.Options{Users: map[string]sdk.Identity{"alice-token": alice}})
	spoof := http.Header{"X-Kedge-User": {"mallory"}}
	tests := []struct {
		name     string
		path     string
		token    string
		wantCode int
		wantUser string
	}{
		{name: "no token", path: "/whoami", wantCode: http.StatusUnauthorized},
		{name: "unknown token", path: "/whoami", token: "nope", wantCode: http.StatusUnauthorized},
		{name: "valid token", path: "/whoami", token: "alice-token", wantCode: http.StatusOK, wantUser: "alice"},
		{name: "public without token", path: "/public/agent", wantCode: http.StatusOK},
		// Public paths never carry identity, even for a known caller.
		{name: "public with token", path: "/public/agent", token: "alice-token", wantCode: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := spoof.Clone()
			if tt.token != "" {
				hdr.Set("Authorization", "Bearer "+tt.token)
			}
			code, s, _ := do(t, hub, hub.BackendURL(tt.path), hdr)
			if code != tt.wantCode {
				t.Fatalf("status %d, want %d", code, tt.wantCode)
			}
			if code != http.StatusOK {
				return
			}
			if s.Identity.User != tt.wantUser || len(s.Headers) != 0 && tt.wantUser == "" {
				t.Fatalf("identity %+v headers %v, want user %q", s.Identity, s.Headers, tt.wantUser)
			}
			if tt.wantUser == "" && s.CallerErr == "" {
				t.Fatal("CallerConfig succeeded without a caller")
			}
		})
	}
}

func TestUIProxy(t *testing.T) {
	hub := testkit.Start(t, echo{}, testkit.Options{})
	hdr := http.Header{"Authorization": {"Bearer secret"}, "X-Kedge-Base-Path": {"/evil"}}

	code, _, h := do(t, hub, hub.UIURL("/main.js"), hdr)
	if code != http.StatusOK {
		t.Fatalf("main.js: %d", code)
	}
	if got := h.Get("X-Seen-Base-Path"); got != "/ui/providers/echo" {
		t.Errorf("base path = %q", got)
	}
	if got := h.Get("X-Seen-Authorization"); got != "" {
		t.Errorf("UI request carried Authorization %q", got)
	}
	// A bare SPA route is the portal's, not the provider's.
	code, _, h = do(t, hub, hub.UIURL("/some/route"), nil)
	if code != http.StatusOK || h.Get("X-Seen-Base-Path") != "" {
		t.Errorf("SPA route reached the provider: %d %v", code, h)
	}
}
