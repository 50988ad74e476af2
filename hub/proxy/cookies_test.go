package proxy

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestBackendStripsHubCookies: the hub's session and pre-login cookies and
// the CSRF header never reach a provider, on private and public paths;
// every other cookie does, unchanged and in order.
func TestBackendStripsHubCookies(t *testing.T) {
	tr, _ := startSocket(t, http.HandlerFunc(echo))
	srv := newBackendFront(t, oneProvider(tr), resolver{})
	for _, tc := range []struct {
		name, path, auth string
		cookies          []string // raw Cookie header lines
		want             []string // cookie pairs the provider must see
	}{
		{name: "session among others", path: "/services/providers/p/x", auth: "Bearer alice-token",
			cookies: []string{"a=1; wharf_session=SEALED; wharf_workspace=old; " + WorkspaceCookie + "=root:acme; wharf_login=L; z=2"},
			want:    []string{"a=1", "wharf_workspace=old", WorkspaceCookie + "=root:acme", "z=2"}},
		{name: "several Cookie lines", path: "/services/providers/p/x", auth: "Bearer alice-token",
			cookies: []string{"wharf_session=S", "prov=keep", "wharf_login=L"},
			want:    []string{"prov=keep"}},
		{name: "only hub cookies", path: "/services/providers/p/x", auth: "Bearer alice-token",
			cookies: []string{"wharf_session=S; wharf_login=L"}},
		{name: "public path", path: "/services/providers/p/agent/tunnel",
			cookies: []string{"wharf_session=S;x=y"}, want: []string{"x=y"}},
		{name: "prefixed hub cookies", path: "/services/providers/p/x", auth: "Bearer alice-token",
			cookies: []string{"a=1; __Host-wharf_session=SEALED; " + WorkspaceCookie + "=root:acme; __Host-wharf_login=L; z=2"},
			want:    []string{"a=1", WorkspaceCookie + "=root:acme", "z=2"}},
		{name: "similar names kept", path: "/services/providers/p/x", auth: "Bearer alice-token",
			cookies: []string{"wharf_session2=a; my_wharf_session=b; __host-wharf_session=c"}, want: []string{"wharf_session2=a", "my_wharf_session=b", "__host-wharf_session=c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
			req.Header["Cookie"] = tc.cookies
			req.Header.Set("X-Wharf-CSRF", "csrf-secret")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
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
			var pairs []string
			for _, line := range got.Header.Values("Cookie") {
				for _, p := range strings.Split(line, ";") {
					if p = strings.TrimSpace(p); p != "" {
						pairs = append(pairs, p)
					}
				}
			}
			if !slices.Equal(pairs, tc.want) {
				t.Errorf("provider saw cookies %q, want %q", pairs, tc.want)
			}
			if v := got.Header.Get("X-Wharf-CSRF"); v != "" {
				t.Errorf("provider saw X-Wharf-CSRF %q", v)
			}
		})
	}
}

// TestBackendDropsHubSetCookies: a provider answers on the hub's origin,
// so it must not set the hub's own cookies (a planted session is login
// CSRF); its own cookies pass unchanged and in order.
func TestBackendDropsHubSetCookies(t *testing.T) {
	tr, _ := startSocket(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, c := range []string{
			"prov=1; Path=/", "__Host-wharf_session=PLANTED; Path=/; Secure", "__Host-wharf_login=L; Path=/; Secure",
			"wharf_session=OLD", " wharf_login=OLD", "prov2=2", WorkspaceCookie + "=root:acme; Path=/; Secure",
		} {
			w.Header().Add("Set-Cookie", c)
		}
	}))
	srv := newBackendFront(t, oneProvider(tr), resolver{})
	for _, path := range []string{"/services/providers/p/x", "/services/providers/p/agent/tunnel"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer alice-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := []string{"prov=1; Path=/", "prov2=2", WorkspaceCookie + "=root:acme; Path=/; Secure"}
		if got := resp.Header.Values("Set-Cookie"); !slices.Equal(got, want) {
			t.Errorf("%s: Set-Cookie %q, want %q", path, got, want)
		}
	}
}
