package tenantfilter

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// xfcc renders a client certificate as Envoy's X-Forwarded-Client-Cert.
func xfcc(certPEM []byte) string {
	return `Hash=abcd;Cert="` + url.QueryEscape(string(certPEM)) + `";Subject="CN=x"`
}

// namespaceNames decodes a NamespaceList body.
func namespaceNames(t testing.TB, body string) []string {
	t.Helper()
	var l corev1.NamespaceList
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatalf("not a NamespaceList: %v: %s", err, body)
	}
	var out []string
	for _, n := range l.Items {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out
}

func statusCode(t testing.TB, body string) (int32, string) {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Kind != "Status" {
		t.Fatalf("not a Status: %v: %s", err, body)
	}
	return st.Code, string(st.Reason)
}

// TestSecurityXFCC: forwarded client certificates count only from trusted
// CIDRs and only when they chain to --client-ca.
func TestSecurityXFCC(t *testing.T) {
	tnt := createTenant(t, newTenant(uniq("xfcc"), userOwner("alice")))
	ns := uniq("xfcc-ns")
	createTenantNamespace(t, tnt, ns, linkCapsule)
	clientCA, otherCA := newTestCA(t, "client-ca"), newTestCA(t, "other-ca")
	good, _ := clientCA.clientCert(t, "alice", capsuleGroup)
	foreign, _ := otherCA.clientCert(t, "alice", capsuleGroup, "system:masters")
	types := "--auth-preferred-types=XForwardedClientCert,BearerToken"

	noCIDRs := startProxy(t, proxyOptions{TLS: true, Args: []string{types, "--client-ca", clientCA.CertFile}})
	untrusted := startProxy(t, proxyOptions{TLS: true, Args: []string{types, "--client-ca", clientCA.CertFile, "--trusted-proxy-cidrs=10.0.0.0/8"}})
	trusted := startProxy(t, proxyOptions{TLS: true, Args: []string{types, "--client-ca", clientCA.CertFile, "--trusted-proxy-cidrs=127.0.0.0/8,::1/128"}})

	tests := []struct {
		name     string
		p        *proxy
		user     string // bearer token too
		cert     []byte
		wantCode int
	}{
		{"forged, no trusted CIDRs", noCIDRs, "", good, 401},
		{"forged from an untrusted address", untrusted, "", good, 401},
		{"forged from an untrusted address, even with a token", untrusted, "bob", good, 401},
		{"trusted proxy, certificate of another CA", trusted, "", foreign, 401},
		{"trusted proxy, good certificate", trusted, "", good, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := tc.p.Do(t, tc.user, http.MethodGet, "/api/v1/namespaces", "",
				http.Header{"X-Forwarded-Client-Cert": {xfcc(tc.cert)}})
			if code != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", code, tc.wantCode, body)
			}
			if code != 200 {
				if c, reason := statusCode(t, body); c != 401 || reason != string(metav1.StatusReasonUnauthorized) {
					t.Fatalf("Status %d %s, want 401 Unauthorized", c, reason)
				}
				return
			}
			if got, want := namespaceNames(t, body), visibleNamespaces(t, "alice"); !slices.Equal(got, want) || !slices.Contains(got, ns) {
				t.Fatalf("alice by XFCC lists %v, want %v with %s", got, want, ns)
			}
		})
	}
}

// TestSecurityForwardedHeaders asserts, at a recording proxy in front of
// the real kube-apiserver, exactly which identity headers the filter
// forwards: client impersonation without the right is stripped, with it
// honoured; Impersonate-Extra-* and headers named in Connection never
// arrive; the caller's token never arrives.
func TestSecurityForwardedHeaders(t *testing.T) {
	rec, kc := startRecorder(t)
	p := startProxy(t, proxyOptions{TLS: true, Kubeconfig: kc})
	tnt := createTenant(t, newTenant(uniq("hdr"), userOwner("alice")))
	ns := uniq("hdr-ns")
	createTenantNamespace(t, tnt, ns, linkCapsule)
	adminToken := fx.Config().BearerToken

	tests := []struct {
		name       string
		user       string
		header     http.Header
		wantCode   int
		wantUser   string
		wantGroups []string // must be forwarded
		denyGroups []string // must not be
	}{
		{"plain", "alice", nil, 200, "alice", []string{capsuleGroup}, nil},
		{"impersonate system:masters without the right: stripped", "alice",
			http.Header{"Impersonate-User": {"alice"}, "Impersonate-Group": {"system:masters"}},
			200, "alice", []string{capsuleGroup}, []string{"system:masters"}},
		{"impersonate another user without the right: stripped", "alice",
			http.Header{"Impersonate-User": {"bob"}}, 200, "alice", []string{capsuleGroup}, nil},
		{"with the right: honoured", "trent",
			http.Header{"Impersonate-User": {"trent"}, "Impersonate-Group": {"system:masters"}},
			200, "trent", []string{"system:masters"}, []string{reviewerGroup}},
		{"Impersonate-Extra and Connection-named headers deleted", "alice",
			http.Header{"Impersonate-Extra-Scopes": {"cluster-admin"}, "Connection": {"X-Hop-Secret, Impersonate-User"},
				"X-Hop-Secret": {"s3cret"}},
			200, "alice", []string{capsuleGroup}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := "/api/v1/namespaces/" + ns + "/configmaps"
			before := len(rec.requests(path))
			code, body := p.Do(t, tc.user, http.MethodGet, path, "", tc.header)
			if code != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", code, tc.wantCode, body)
			}
			got := rec.requests(path)
			if len(got) != before+1 {
				t.Fatalf("%d downstream requests for one call, want 1", len(got)-before)
			}
			h := got[len(got)-1].Header
			if a := h.Get("Authorization"); a != "Bearer "+adminToken {
				t.Errorf("Authorization forwarded is not the provider's credential")
			}
			if u := h.Values("Impersonate-User"); !slices.Equal(u, []string{tc.wantUser}) {
				t.Errorf("Impersonate-User %v, want [%s]", u, tc.wantUser)
			}
			groups := h.Values("Impersonate-Group")
			for _, g := range tc.wantGroups {
				if !slices.Contains(groups, g) {
					t.Errorf("Impersonate-Group %v lacks %s", groups, g)
				}
			}
			for _, g := range tc.denyGroups {
				if slices.Contains(groups, g) {
					t.Errorf("Impersonate-Group %v carries %s", groups, g)
				}
			}
			for k := range h {
				switch {
				case k == "Impersonate-Uid" && slices.Equal(h[k], []string{tc.wantUser}):
					// The fixture's static-token users have UID = name;
					// the filter forwards the authenticated UID.
				case strings.HasPrefix(k, "Impersonate-Extra-"), k == "X-Hop-Secret", k == "Impersonate-Uid":
					t.Errorf("forwarded %s: %v", k, h[k])
				case strings.HasPrefix(k, "Impersonate-") && k != "Impersonate-User" && k != "Impersonate-Group":
					t.Errorf("unexpected identity header %s: %v", k, h[k])
				}
			}
		})
	}
	// The stripped system:masters really bought nothing downstream: alice
	// still cannot read kube-system, trent with the right can.
	for _, tc := range []struct {
		user string
		want int
	}{{"alice", 403}, {"trent", 200}} {
		code, body := p.Do(t, tc.user, http.MethodGet, "/api/v1/namespaces/kube-system/configmaps", "",
			http.Header{"Impersonate-User": {tc.user}, "Impersonate-Group": {"system:masters"}})
		if code != tc.want {
			t.Errorf("%s impersonating system:masters in kube-system: %d, want %d: %s", tc.user, code, tc.want, body)
		}
	}
}

// TestSecurityWebsocketBearer: kubectl's websocket subprotocol token
// authenticates, and does not travel downstream.
func TestSecurityWebsocketBearer(t *testing.T) {
	rec, kc := startRecorder(t)
	p := startProxy(t, proxyOptions{TLS: true, Kubeconfig: kc})
	tnt := createTenant(t, newTenant(uniq("ws"), userOwner("alice")))
	ns := uniq("ws-ns")
	createTenantNamespace(t, tnt, ns, linkCapsule)

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.CA.CertPEM)
	d := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		HandshakeTimeout: time.Minute,
		Subprotocols: []string{"base64url.bearer.authorization.k8s.io." +
			base64.RawURLEncoding.EncodeToString([]byte(fx.Token(t, "alice"))), "base64.binary.k8s.io"}}
	path := "/api/v1/namespaces/" + ns + "/configmaps"
	u := "wss" + strings.TrimPrefix(p.URL, "https") + path + "?watch=true"
	// kube-apiserver's watch websocket (x/net/websocket) refuses a
	// handshake without Origin; browsers and kubectl send one.
	origin := http.Header{"Origin": {p.URL}}
	conn, resp, err := d.Dial(u, origin)
	if err != nil {
		code, body := 0, ""
		if resp != nil {
			code = resp.StatusCode
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
		}
		t.Fatalf("websocket watch as alice: %v (HTTP %d): %s; downstream saw %d requests", err, code, body, len(rec.requests(path)))
	}
	defer conn.Close()
	if _, err := adminClientset().CoreV1().ConfigMaps(ns).Create(testCtx(t),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ws-probe"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("watch over websocket: %v", err)
		}
		if dec, err := base64.StdEncoding.DecodeString(string(msg)); err == nil {
			msg = dec
		}
		if strings.Contains(string(msg), `"ws-probe"`) {
			break
		}
	}
	for _, r := range rec.requests(path) {
		for _, v := range r.Header.Values("Sec-Websocket-Protocol") {
			if strings.Contains(v, "bearer") {
				t.Fatalf("bearer subprotocol forwarded downstream: %q", v)
			}
		}
		if r.Header.Get("Impersonate-User") != "alice" {
			t.Fatalf("websocket forwarded as %q, want alice", r.Header.Get("Impersonate-User"))
		}
	}
	// A bad token in the subprotocol is refused.
	d.Subprotocols = []string{"base64url.bearer.authorization.k8s.io." + base64.RawURLEncoding.EncodeToString([]byte("nope")), "base64.binary.k8s.io"}
	if _, resp, err := d.Dial(u, origin); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad websocket token: %v, %v; want 401", err, resp)
	}
}
