package hub

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// probeHeaders is the probe provider's /headers answer.
type probeHeaders struct {
	Served  int64
	Headers http.Header
}

// identityHeaders returns every header the provider received whose name,
// read the way a CGI-style server would (any case, '_' for '-'), starts
// with X-Kedge-; Go's own canonical keys would hide an "X_Kedge_User".
func identityHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if strings.HasPrefix(strings.ReplaceAll(strings.ToLower(k), "_", "-"), "x-kedge-") {
			out[k] = v
		}
	}
	return out
}

// testForgedHeaders sends forged identity headers in every spelling the
// table lists and asserts the exact identity headers the provider got.
func testForgedHeaders(t *testing.T, c *contractHub) {
	alice := http.Header{
		"X-Kedge-User":    {"alice"},
		"X-Kedge-Groups":  {"devs", "system:authenticated"},
		"X-Kedge-Tenant":  {"root:prov"},
		"X-Kedge-Cluster": {c.cluster},
	}
	ws := []string{"root:prov"}
	for _, tc := range []struct {
		name   string
		path   string
		token  string
		forged http.Header
		// want is the exact set of identity headers the provider receives.
		want http.Header
		// authz is the Authorization the provider receives.
		authz []string
	}{
		{name: "none", forged: http.Header{}},
		{name: "canonical", forged: http.Header{"X-Kedge-User": {"mallory"}}},
		{name: "lower case", forged: http.Header{"x-kedge-user": {"mallory"}}},
		{name: "upper case", forged: http.Header{"X-KEDGE-USER": {"mallory"}}},
		{name: "mixed case", forged: http.Header{"X-Kedge-user": {"mallory"}, "x-KeDgE-UsEr": {"eve"}}},
		{name: "underscores", forged: http.Header{"X_Kedge_User": {"mallory"}, "x_kedge_groups": {"system:masters"}}},
		{name: "duplicates", forged: http.Header{"X-Kedge-User": {"mallory", "eve"}, "x-kedge-user": {"trudy"}}},
		{name: "empty value", forged: http.Header{"X-Kedge-User": {""}, "X-Kedge-Groups": {""}}},
		{name: "connection names the user", forged: http.Header{"Connection": {"X-Kedge-User"}, "X-Kedge-User": {"mallory"}}},
		{name: "connection names all", forged: http.Header{
			"Connection":   {"keep-alive, x-kedge-user, X-KEDGE-GROUPS", "X-Kedge-Tenant,X-Kedge-Cluster"},
			"X-Kedge-User": {"mallory"}}},
		{name: "tenant cluster groups base path", forged: http.Header{
			"X-Kedge-Tenant":    {"root"},
			"X-Kedge-Cluster":   {"root-cluster"},
			"X-Kedge-Groups":    {"system:masters", "admins,system:masters"},
			"X-Kedge-Base-Path": {"/evil"},
			"X-Kedge-Anything":  {"x"},
		}},
		{name: "impersonation headers", forged: http.Header{"Impersonate-User": {"wharf-admin"}, "Impersonate-Group": {"system:masters"}}},
		{name: "public path", path: "/services/providers/probe/public/headers", token: "-", forged: http.Header{
			"X-Kedge-User": {"mallory"}, "x-kedge-groups": {"system:masters"}, "X-Kedge-Tenant": {"root"}, "Connection": {"X-Kedge-User"},
		}, want: http.Header{}, authz: []string{}},
		{name: "public path with a token", path: "/services/providers/probe/public/headers", forged: http.Header{
			"X-KEDGE-USER": {"mallory"},
		}, want: http.Header{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, token, want, authz := tc.path, tc.token, tc.want, tc.authz
			if path == "" {
				path = "/services/providers/probe/headers"
			}
			if token == "" {
				token = aliceToken
			} else if token == "-" {
				token = ""
			}
			if want == nil {
				want = alice
			}
			if authz == nil {
				authz = []string{"Bearer " + aliceToken}
			}
			hdr := tc.forged.Clone()
			hdr["X-Wharf-Workspace"] = ws
			code, body := c.call(t, token, path, hdr)
			if code != http.StatusOK {
				t.Fatalf("%s = %d %s", path, code, body)
			}
			var got probeHeaders
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if ids := identityHeaders(got.Headers); !reflect.DeepEqual(ids, want) {
				t.Errorf("provider received identity headers\n%v\nwant exactly\n%v", ids, want)
			}
			if a := got.Headers.Values("Authorization"); !reflect.DeepEqual(append([]string{}, a...), authz) {
				t.Errorf("provider received Authorization %q, want %q", a, authz)
			}
			for k, vs := range got.Headers {
				// The provider routes do not impersonate, so a provider
				// never sees what the caller asked to be (issue 11.1).
				if strings.HasPrefix(strings.ToLower(k), "impersonate-") {
					t.Errorf("%s reached the provider: %q", k, vs)
				}
				for _, v := range vs {
					for _, bad := range []string{"mallory", "eve", "trudy", "system:masters", "/evil", "root-cluster"} {
						if strings.Contains(v, bad) {
							t.Errorf("forged value %q reached the provider in %s: %q", bad, k, v)
						}
					}
				}
			}
		})
	}

	// A workspace the caller may not use is refused before the provider is
	// reached, forged identity or not: the provider's request count moves
	// by exactly one, the follow-up request.
	t.Run("inaccessible workspace", func(t *testing.T) {
		before := served(t, c)
		for _, w := range []string{"root:prov", c.cluster, "root:nope"} {
			hdr := http.Header{"X-Wharf-Workspace": {w}, "X-Kedge-User": {"alice"}, "X-Kedge-Tenant": {w}}
			if code, body := c.call(t, bobToken, "/services/providers/probe/headers", hdr); code != http.StatusForbidden {
				t.Errorf("bob in %s = %d %s", w, code, body)
			}
		}
		if after := served(t, c); after != before+1 {
			t.Errorf("provider served %d requests, want 1: refused requests reached it", after-before)
		}
	})
}

// served is the probe provider's request count, including this request.
func served(t *testing.T, c *contractHub) int64 {
	t.Helper()
	code, body := c.call(t, aliceToken, "/services/providers/probe/headers", http.Header{"X-Wharf-Workspace": {"root:prov"}})
	var got probeHeaders
	if err := json.Unmarshal([]byte(body), &got); code != http.StatusOK || err != nil {
		t.Fatalf("probe headers = %d %s (%v)", code, body, err)
	}
	return got.Served
}
