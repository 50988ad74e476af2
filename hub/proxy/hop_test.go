package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"

	"github.com/wharfhub/wharf/hub/replicas"
	"github.com/wharfhub/wharf/sdk"
)

// hopPair is two replicas behind the real routes: "holder" runs provider
// p on a socket, "other" forwards p to it.
type hopPair struct {
	other, holder *httptest.Server
	holderHop     *replicas.Asserter
	otherHop      *replicas.Asserter
}

func testAuth() authenticator.Request {
	return authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		u, ok := users[r.Header.Get("Authorization")]
		if !ok {
			return nil, false, nil
		}
		return &authenticator.Response{User: u}, true, nil
	})
}

func newHopPair(t *testing.T, provider http.Handler) *hopPair {
	t.Helper()
	secret := bytes.Repeat([]byte{7}, 32)
	hp := &hopPair{}
	var err error
	if hp.holderHop, err = replicas.NewAsserter("holder", secret); err != nil {
		t.Fatal(err)
	}
	if hp.otherHop, err = replicas.NewAsserter("other", secret); err != nil {
		t.Fatal(err)
	}
	tr, _ := startSocket(t, provider)
	local := ProvidersFunc(func(name string) (Target, bool) {
		return Target{Transport: tr, PublicPaths: []string{"/agent/"}}, name == "p"
	})
	shell := http.NotFoundHandler()
	hp.holder = httptest.NewTLSServer(WithProviderRoutes(shell, NewBackend(local, resolver{}).WithHop(hp.holderHop), NewUI(local, shell), testAuth(), nil))
	t.Cleanup(hp.holder.Close)
	hu, _ := url.Parse(hp.holder.URL)
	remote := &Remote{Replica: "holder", URL: hu, Transport: hp.holder.Client().Transport, From: "other"}
	forwarding := ProvidersFunc(func(name string) (Target, bool) {
		return Target{Remote: remote, PublicPaths: []string{"/agent/"}}, name == "p"
	})
	hp.other = httptest.NewServer(WithProviderRoutes(shell, NewBackend(forwarding, resolver{}).WithHop(hp.otherHop), NewUI(forwarding, shell), testAuth(), nil))
	t.Cleanup(hp.other.Close)
	return hp
}

// The identity established on the first replica reaches the provider
// exactly, whatever X-Kedge-* or assertion headers the caller adds.
func TestHopForgedHeaders(t *testing.T) {
	hp := newHopPair(t, http.HandlerFunc(echo))
	aliceID := http.Header{
		"X-Kedge-User":    {"alice"},
		"X-Kedge-Groups":  {"dev", "system:authenticated"},
		"X-Kedge-Tenant":  {"root:acme"},
		"X-Kedge-Cluster": {"c0acme"},
	}
	forged, err := hp.otherHop.Sign("holder", replicas.Binding{Provider: "p", Method: "GET", Path: "/whoami"}, sdk.Identity{User: "mallory"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		target *httptest.Server
		path   string
		header http.Header
		code   int
		want   http.Header // every X-Kedge-* header the provider saw
	}{
		{name: "plain", target: hp.other, path: "/whoami", header: http.Header{"Authorization": {"Bearer alice-token"}}, code: 200, want: aliceID},
		{name: "forged in many cases", target: hp.other, path: "/whoami", header: http.Header{
			"Authorization": {"Bearer alice-token"}, "X-Kedge-User": {"mallory"}, "x-kedge-user": {"m2"}, "X-KEDGE-GROUPS": {"system:masters"},
			"X-Kedge-Tenant": {"root"}, "X-Kedge-Cluster": {"evil"}, "X-Kedge-Extra": {"1"}}, code: 200, want: aliceID},
		{name: "duplicates", target: hp.other, path: "/whoami", header: http.Header{
			"Authorization": {"Bearer alice-token"}, "X-Kedge-User": {"mallory", "alice"}}, code: 200, want: aliceID},
		{name: "connection names identity", target: hp.other, path: "/whoami", header: http.Header{
			"Authorization": {"Bearer alice-token"}, "Connection": {"X-Kedge-User, X-Wharf-Replica-Assertion"}}, code: 200, want: aliceID},
		{name: "client assertion to first replica is refused", target: hp.other, path: "/whoami", header: http.Header{
			"Authorization": {"Bearer alice-token"}, AssertionHeader: {forged}}, code: 401},
		{name: "hop marker from a client is not forwarded again", target: hp.other, path: "/agent/x", header: http.Header{
			"X-Kedge-User": {"mallory"}, HopHeader: {"holder"}}, code: 503},
		{name: "public path through hop", target: hp.other, path: "/agent/x", header: http.Header{"X-Kedge-User": {"mallory"}}, code: 200, want: http.Header{}},
		{name: "forged assertion straight to holder", target: hp.holder, path: "/whoami", header: http.Header{
			AssertionHeader: {forged + "x"}, "X-Kedge-User": {"mallory"}}, code: 401},
		{name: "assertion bound to another path", target: hp.holder, path: "/admin", header: http.Header{AssertionHeader: {forged}}, code: 401},
		{name: "two assertions", target: hp.holder, path: "/whoami", header: http.Header{AssertionHeader: {forged, forged}}, code: 401},
		{name: "valid assertion with forged headers", target: hp.holder, path: "/whoami", header: http.Header{
			AssertionHeader: {forged}, "X-Kedge-User": {"root"}, "X-Kedge-Groups": {"system:masters"}, "Connection": {"X-Kedge-User"}},
			code: 200, want: http.Header{"X-Kedge-User": {"mallory"}}},
		{name: "replayed assertion", target: hp.holder, path: "/whoami", header: http.Header{AssertionHeader: {forged}}, code: 401},
		{name: "no token", target: hp.other, path: "/whoami", code: 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, tc.target.URL+"/services/providers/p"+tc.path, nil)
			for k, v := range tc.header {
				req.Header[k] = v
			}
			resp, err := tc.target.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.code, b)
			}
			if tc.code != 200 {
				return
			}
			var got seen
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if k := kedgeHeaders(got.Header); !reflect.DeepEqual(k, tc.want) {
				t.Errorf("provider saw X-Kedge-* %v, want %v", k, tc.want)
			}
			for _, h := range []string{AssertionHeader, HopHeader} {
				if v := got.Header.Values(h); len(v) > 0 {
					t.Errorf("provider saw %s: %q", h, v)
				}
			}
			if a, want := got.Header.Get("Authorization"), tc.header.Get("Authorization"); a != want {
				t.Errorf("Authorization %q, want %q", a, want)
			}
			if got.Path != "/services"+tc.path {
				t.Errorf("provider path %q", got.Path)
			}
			if tc.target == hp.other && tc.header.Get("Authorization") != "" {
				// The client, then the first replica: both hops are visible.
				if xff := got.Header.Get("X-Forwarded-For"); strings.Count(xff, ",") != 1 {
					t.Errorf("X-Forwarded-For %q, want client and first replica", xff)
				}
			}
		})
	}
}

// UI assets are forwarded without credentials and served by the holder.
func TestHopUI(t *testing.T) {
	hp := newHopPair(t, http.HandlerFunc(echo))
	req, _ := http.NewRequest(http.MethodGet, hp.other.URL+"/ui/providers/p/app.json", nil)
	req.Header.Set("Authorization", "Bearer alice-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got seen
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	if got.Path != "/ui/app.json" || got.Header.Get(sdk.HeaderBasePath) != "/ui/providers/p" ||
		got.Header.Get("Authorization") != "" || got.Header.Get(HopHeader) != "" {
		t.Fatalf("provider saw %+v", got)
	}
}

// A holder that is gone, or drops the connection without answering, is a
// 503 with Retry-After for the caller: another replica is about to take
// the provider over.
func TestHopHolderGone(t *testing.T) {
	drop := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = c.Close()
		}
	}))
	t.Cleanup(drop.Close)
	gone := httptest.NewTLSServer(http.NotFoundHandler())
	goneURL, goneTransport := gone.URL, gone.Client().Transport
	gone.Close()
	hop, err := replicas.NewAsserter("other", bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	for name, srv := range map[string]struct {
		url string
		tr  http.RoundTripper
	}{"drops connection": {drop.URL, drop.Client().Transport}, "gone": {goneURL, goneTransport}} {
		t.Run(name, func(t *testing.T) {
			u, _ := url.Parse(srv.url)
			remote := &Remote{Replica: "holder", URL: u, Transport: srv.tr, From: "other"}
			targets := ProvidersFunc(func(n string) (Target, bool) { return Target{Remote: remote}, n == "p" })
			front := httptest.NewServer(WithProviderRoutes(http.NotFoundHandler(), NewBackend(targets, resolver{}).WithHop(hop), NewUI(targets, nil), testAuth(), nil))
			t.Cleanup(front.Close)
			for _, path := range []string{"/services/providers/p/whoami", "/ui/providers/p/app.js"} {
				req, _ := http.NewRequest(http.MethodGet, front.URL+path, nil)
				req.Header.Set("Authorization", "Bearer alice-token")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
					t.Errorf("%s: %d (Retry-After %q) %s", path, resp.StatusCode, resp.Header.Get("Retry-After"), b)
				}
			}
		})
	}
}
