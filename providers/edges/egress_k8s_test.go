package edges

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/wharfhub/wharf/sdk"
)

// seen is what the edge's side of the tunnel received.
type seen struct {
	URI    string              `json:"uri"`
	Host   string              `json:"host"`
	Header map[string][]string `json:"header"`
}

// echoTarget answers every request with what it received, streams /stream,
// and echoes the bytes of any upgraded connection.
func echoTarget(release <-chan struct{}) http.Handler {
	up := websocket.Upgrader{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/ws":
			c, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer c.Close()
			for {
				typ, b, err := c.ReadMessage()
				if err != nil {
					return
				}
				if err := c.WriteMessage(typ, b); err != nil {
					return
				}
			}
		case strings.EqualFold(r.Header.Get("Connection"), "Upgrade"):
			// SPDY-style upgrade as kubelet answers exec: 101, then raw bytes.
			conn, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", r.Header.Get("Upgrade"))
			_ = brw.Flush()
			_, _ = io.Copy(conn, brw)
		case r.URL.Path == "/stream":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintln(w, `{"type":"ADDED"}`)
			http.NewResponseController(w).Flush()
			<-release
			fmt.Fprintln(w, `{"type":"MODIFIED"}`)
		default:
			http.SetCookie(w, &http.Cookie{Name: "wharf_session", Value: "fixed-by-edge"})
			h := map[string][]string{}
			for k, v := range r.Header {
				h[k] = v
			}
			_ = json.NewEncoder(w).Encode(seen{URI: r.RequestURI, Host: r.Host, Header: h})
		}
	})
}

func getSeen(t *testing.T, req *http.Request) seen {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if c := resp.Header.Values("Set-Cookie"); len(c) > 0 {
		t.Errorf("the edge set cookies on the hub's origin: %q", c)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); csp != "sandbox" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("the edge's answer may run script on the hub's origin: CSP %q, nosniff %q", csp, resp.Header.Get("X-Content-Type-Options"))
	}
	var s seen
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return s
}

// TestEgressForwardedHeaders asserts the exact header set that reaches the
// edge: no hub credential, no identity the caller made up, and the
// hub-asserted caller in HeaderEdgeUser/Group without system: groups.
func TestEgressForwardedHeaders(t *testing.T) {
	f := newEgressFixture(t, echoTarget(nil))
	for _, tc := range []struct {
		name string
		in   http.Header
		want http.Header
	}{
		{"bare", http.Header{}, http.Header{
			"X-Wharf-Edge-User": {"alice"}, "X-Wharf-Edge-Group": {"devs", "ops"},
		}},
		{"credentials and forgeries", http.Header{
			"Authorization":         {"Bearer hub-token-secret"},
			"Proxy-Authorization":   {"Basic eDp5"},
			"Cookie":                {"wharf_session=secret"},
			"Impersonate-User":      {"admin"},
			"Impersonate-Group":     {"system:masters"},
			"Impersonate-Uid":       {"0"},
			"Impersonate-Extra-Foo": {"bar"},
			"X-Wharf-Edge-User":     {"mallory"},
			"X-Wharf-Edge-Group":    {"system:masters"},
			"X-Wharf-Workspace":     {"root:other"},
			"X_wharf_edge_user":     {"mallory"},
			"Impersonate_user":      {"admin"},
			"X-Remote-User":         {"admin"},
			"X-Remote-Group":        {"system:masters"},
			"Accept":                {"application/json;as=Table;v=v1;g=meta.k8s.io"},
			"User-Agent":            {"kubectl/v1.37.2"},
			"Content-Type":          {"application/json"},
			"X-Forwarded-For":       {"10.0.0.1"},
		}, http.Header{
			"X-Wharf-Edge-User": {"alice"}, "X-Wharf-Edge-Group": {"devs", "ops"},
			"Accept": {"application/json;as=Table;v=v1;g=meta.k8s.io"}, "User-Agent": {"kubectl/v1.37.2"},
			"Content-Type": {"application/json"},
		}},
		{"hop-by-hop named in Connection", http.Header{
			"Connection": {"X-Wharf-Edge-User, Keep-Alive"}, "Keep-Alive": {"timeout=5"}, "Te": {"trailers"},
		}, http.Header{
			"X-Wharf-Edge-User": {"alice"}, "X-Wharf-Edge-Group": {"devs", "ops"}, "Te": {"trailers"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := asHub(t, "GET", f.url("c1", "kube", "/k8s/api/v1/namespaces"), alice)
			for k, v := range tc.in {
				req.Header[k] = v
			}
			got := getSeen(t, req)
			// Accept-Encoding is Go's client adding gzip on the test's side;
			// it reaches the edge unchanged, as a client's would.
			delete(got.Header, "Accept-Encoding")
			if ua := got.Header["User-Agent"]; tc.want["User-Agent"] == nil && len(ua) == 1 && strings.HasPrefix(ua[0], "Go-http-client/") {
				delete(got.Header, "User-Agent")
			}
			if !reflect.DeepEqual(http.Header(got.Header), tc.want) {
				t.Errorf("forwarded headers\n got %v\nwant %v", sortedHeader(got.Header), sortedHeader(tc.want))
			}
			if got.Host != tunnelHost {
				t.Errorf("Host %q", got.Host)
			}
		})
	}
}

func sortedHeader(h map[string][]string) string {
	var ks []string
	for k, v := range h {
		ks = append(ks, k+"="+strings.Join(v, "|"))
	}
	sort.Strings(ks)
	return strings.Join(ks, " ")
}

// TestEgressPathAndQuery: the agent sees the plain API path and query,
// escaped as the client sent them.
func TestEgressPathAndQuery(t *testing.T) {
	f := newEgressFixture(t, echoTarget(nil))
	for suffix, want := range map[string]string{
		"/k8s":                              "/",
		"/k8s/":                             "/",
		"/k8s/api/v1/namespaces?limit=500":  "/api/v1/namespaces?limit=500",
		"/k8s/api/v1/namespaces/a%2Fb/pods": "/api/v1/namespaces/a%2Fb/pods",
		"/k8s/apis/x/v1/things?labelSelector=" + url.QueryEscape("a=b,c!=d") + "&watch=1": "/apis/x/v1/things?labelSelector=a%3Db%2Cc%21%3Dd&watch=1",
	} {
		if got := getSeen(t, asHub(t, "GET", f.url("c1", "kube", suffix), alice)).URI; got != want {
			t.Errorf("%s: edge saw %q, want %q", suffix, got, want)
		}
	}
}

// TestEgressStreams: a watch's first event arrives before the edge has
// finished the response.
func TestEgressStreams(t *testing.T) {
	release := make(chan struct{})
	f := newEgressFixture(t, echoTarget(release))
	resp, err := http.DefaultClient.Do(asHub(t, "GET", f.url("c1", "kube", "/k8s/stream"), alice))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "{\"type\":\"ADDED\"}\n" {
		t.Fatalf("first event %q %v", line, err)
	}
	close(release)
	if line, err = br.ReadString('\n'); err != nil || line != "{\"type\":\"MODIFIED\"}\n" {
		t.Fatalf("second event %q %v", line, err)
	}
}

// TestEgressUpgradeSPDY: an exec-style upgrade (101, then raw bytes) passes
// through byte-exact in both directions.
func TestEgressUpgradeSPDY(t *testing.T) {
	f := newEgressFixture(t, echoTarget(nil))
	u, _ := url.Parse(f.url("c1", "kube", "/k8s/api/v1/namespaces/default/pods/p/exec?command=sh&stdin=true"))
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := asHub(t, "POST", u.String(), alice)
	req.Header.Set("Authorization", "Bearer hub-secret")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "SPDY/3.1")
	req.Header.Set("X-Stream-Protocol-Version", "v4.channel.k8s.io")
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Upgrade") != "SPDY/3.1" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	payload := make([]byte, 256<<10)
	_, _ = rand.Read(payload)
	go func() { _, _ = conn.Write(payload) }()
	got := make([]byte, len(payload))
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	if _, err := io.ReadFull(br, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatal("upgraded bytes differ")
	}
	waitFor(t, 10*time.Second, func() bool { return f.metrics.get("kubernetes to_edge") >= len(payload) })
	waitFor(t, 10*time.Second, func() bool { return f.metrics.get("kubernetes from_edge") >= len(payload) })
}

// TestEgressUpgradeWebsocket: a websocket (kubectl's newer exec and
// port-forward transport) through the egress.
func TestEgressUpgradeWebsocket(t *testing.T) {
	f := newEgressFixture(t, echoTarget(nil))
	h := http.Header{}
	sdk.SetIdentity(h, alice)
	h.Set("Sec-WebSocket-Protocol", "v5.channel.k8s.io")
	ws, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(f.url("c1", "kube", "/k8s/ws"), "http"), h)
	if err != nil {
		t.Fatalf("%v %v", err, resp)
	}
	defer ws.Close()
	for i, msg := range [][]byte{{0, 1, 2, 255}, bytes.Repeat([]byte("x"), 100<<10), {}} {
		if err := ws.WriteMessage(websocket.BinaryMessage, msg); err != nil {
			t.Fatal(err)
		}
		_, got, err := ws.ReadMessage()
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("message %d: %v (len %d)", i, err, len(got))
		}
	}
}

// TestEgressTunnelReplaced: when the agent reconnects (a new tunnel), the
// transport of the old one is dropped and requests use the new one.
func TestEgressTunnelReplaced(t *testing.T) {
	f := newEgressFixture(t, echoTarget(nil))
	_ = getSeen(t, asHub(t, "GET", f.url("c1", "kube", "/k8s/api"), alice))
	old, _ := f.hub.tunnel("c1", "kube")
	_ = f.kube.Close()
	second := f.hub.agent("c1", "kube") // a new tunnel of the same edge
	waitFor(t, 30*time.Second, func() bool { cur, ok := f.hub.tunnel("c1", "kube"); return ok && cur != old })
	srv := &http.Server{Handler: echoTarget(nil)}
	go func() { _ = srv.Serve(second) }()
	t.Cleanup(func() { _ = srv.Close() })
	_ = getSeen(t, asHub(t, "GET", f.url("c1", "kube", "/k8s/api"), alice))
	waitFor(t, 10*time.Second, func() bool {
		f.egress.mu.Lock()
		defer f.egress.mu.Unlock()
		_, stale := f.egress.transports[old]
		return !stale && len(f.egress.transports) == 1
	})
}
