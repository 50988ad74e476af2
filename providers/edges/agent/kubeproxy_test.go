package agent

import (
	"bufio"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/providers/edges/protocol"
)

// recorder is a TLS stand-in for the edge API server that records what
// reaches it, and serves a streaming endpoint and an upgrade echo.
type recorder struct {
	srv *httptest.Server

	mu   sync.Mutex
	hdrs []http.Header
}

func newRecorder(t *testing.T) *recorder {
	rec := &recorder{}
	rec.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.hdrs = append(rec.hdrs, r.Header.Clone())
		rec.mu.Unlock()
		switch r.URL.Path {
		case "/upgrade":
			upgradeEcho(w, r)
		case "/watch":
			// One event now, the next only after the client saw the
			// first: a buffering proxy would deadlock here.
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"type":"ADDED"}`+"\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"kind":"Status","status":"Success"}`)
		}
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

// upgradeEcho answers an Upgrade with 101 and echoes raw bytes, the way
// exec/attach/port-forward streams ride the connection after the switch.
func upgradeEcho(w http.ResponseWriter, r *http.Request) {
	proto := r.Header.Get("Upgrade")
	if proto == "" {
		http.Error(w, "upgrade required", http.StatusBadRequest)
		return
	}
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + proto + "\r\n\r\n")
	_ = brw.Flush()
	_, _ = io.Copy(c, brw)
}

func (rec *recorder) last(t *testing.T) http.Header {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.hdrs) == 0 {
		t.Fatal("nothing reached the edge API server")
	}
	return rec.hdrs[len(rec.hdrs)-1]
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.hdrs)
}

func (rec *recorder) restConfig() *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rec.srv.Certificate().Raw})
	return &rest.Config{Host: rec.srv.URL, BearerToken: "agent-own-token", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

func proxyServer(t *testing.T, rec *recorder, mode IdentityMode, prefix string) *httptest.Server {
	t.Helper()
	h, err := newKubeProxy(rec.restConfig(), mode, prefix)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(h)
	t.Cleanup(front.Close)
	return front
}

// TestKubeProxyHeaders asserts the exact headers that reach the edge API
// server for each identity mode and each attempt to smuggle identity or
// credentials through.
func TestKubeProxyHeaders(t *testing.T) {
	rec := newRecorder(t)
	hostile := http.Header{
		"Authorization":                   {"Bearer hub-credential-of-caller"},
		"Proxy-Authorization":             {"Basic eDp5"},
		"Cookie":                          {"wharf_session=hub-cookie"},
		"Impersonate-User":                {"evil"},
		"Impersonate-Group":               {"system:masters"},
		"Impersonate-Uid":                 {"0"},
		"Impersonate-Extra-Scopes":        {"all"},
		"impersonate-user":                {"evil-lowercase"},
		"X-Kedge-User":                    {"forged"},
		"X-Wharf-Edge-Extra":              {"x"},
		"Connection":                      {"Impersonate-User, Impersonate-Group"},
		"Accept":                          {"application/json"},
		protocol.HeaderEdgeUser:           {"alice"},
		protocol.HeaderEdgeGroup:          {"devs", "system:masters", "system:authenticated", "", "ops"},
		"X-Unrelated-Header-Passes-Along": {"1"},
	}
	base := http.Header{
		"Accept":                          {"application/json"},
		"Authorization":                   {"Bearer agent-own-token"},
		"X-Unrelated-Header-Passes-Along": {"1"},
	}
	with := func(kv ...string) http.Header {
		h := base.Clone()
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	tests := []struct {
		name   string
		mode   IdentityMode
		prefix string
		user   []string // X-Wharf-Edge-User override; nil keeps alice
		want   http.Header
		code   int
	}{
		{name: "impersonate", mode: IdentityImpersonate, code: 200,
			want: with("Impersonate-User", "alice", "Impersonate-Group", "devs", "Impersonate-Group", "ops")},
		{name: "impersonate with prefix", mode: IdentityImpersonate, prefix: "hub:", code: 200,
			want: with("Impersonate-User", "hub:alice", "Impersonate-Group", "hub:devs", "Impersonate-Group", "hub:ops")},
		{name: "agent mode", mode: IdentityAgent, code: 200, want: base},
		{name: "no user is 401", mode: IdentityImpersonate, user: []string{}, code: 401},
		{name: "empty user is 401", mode: IdentityImpersonate, user: []string{""}, code: 401},
		{name: "two users is 401", mode: IdentityImpersonate, user: []string{"alice", "bob"}, code: 401},
		{name: "hub service account unprefixed is 403", mode: IdentityImpersonate, user: []string{"system:serviceaccount:kube-system:namespace-controller"}, code: 403},
		{name: "system user unprefixed is 403", mode: IdentityImpersonate, user: []string{"system:kube-controller-manager"}, code: 403},
		{name: "hub service account prefixed", mode: IdentityImpersonate, prefix: "hub:", user: []string{"system:serviceaccount:ns:sa"}, code: 200,
			want: with("Impersonate-User", "hub:system:serviceaccount:ns:sa", "Impersonate-Group", "hub:devs", "Impersonate-Group", "hub:ops")},
		{name: "hub provider identity", mode: IdentityImpersonate, user: []string{"system:wharf:provider:probe"}, code: 200,
			want: with("Impersonate-User", "system:wharf:provider:probe", "Impersonate-Group", "devs", "Impersonate-Group", "ops")},
		{name: "agent mode without user", mode: IdentityAgent, user: []string{}, code: 200, want: base},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			front := proxyServer(t, rec, tc.mode, tc.prefix)
			req, _ := http.NewRequest(http.MethodGet, front.URL+"/api/v1/namespaces", nil)
			for k, v := range hostile {
				req.Header[k] = append([]string(nil), v...)
			}
			if tc.user != nil {
				req.Header[protocol.HeaderEdgeUser] = tc.user
			}
			before := rec.count()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.code, body)
			}
			if tc.code != 200 {
				var st metav1.Status
				if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" || int(st.Code) != tc.code {
					t.Fatalf("body %s is not a Status with code %d (%v)", body, tc.code, err)
				}
				if rec.count() != before {
					t.Fatalf("a refused request reached the edge API server: %v", rec.last(t))
				}
				return
			}
			got := rec.last(t).Clone()
			// Transport-level headers, not identity.
			for _, k := range []string{"Accept-Encoding", "User-Agent"} {
				got.Del(k)
			}
			if !reflect.DeepEqual(sortedHeader(got), sortedHeader(tc.want)) {
				t.Fatalf("headers at the edge API server:\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func sortedHeader(h http.Header) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[http.CanonicalHeaderKey(k)] += strings.Join(v, "|")
	}
	return out
}

// TestKubeProxyStreamsAndUpgrades: a watch is flushed event by event and
// an upgraded connection carries bytes both ways unchanged.
func TestKubeProxyStreamsAndUpgrades(t *testing.T) {
	rec := newRecorder(t)
	front := proxyServer(t, rec, IdentityImpersonate, "")

	req, _ := http.NewRequest(http.MethodGet, front.URL+"/watch", nil)
	req.Header.Set(protocol.HeaderEdgeUser, "alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	resp.Body.Close()
	if err != nil || line != `{"type":"ADDED"}`+"\n" {
		t.Fatalf("first watch event %q, %v", line, err)
	}

	for _, proto := range []string{"SPDY/3.1", "websocket"} {
		c, err := dialRaw(front.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(c, "POST /upgrade HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: "+proto+"\r\n"+
			protocol.HeaderEdgeUser+": alice\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("%s: upgrade answer %v, %v", proto, resp, err)
		}
		payload := make([]byte, 256<<10)
		for i := range payload {
			payload[i] = byte(i * 7)
		}
		go func() { _, _ = c.Write(payload) }()
		got := make([]byte, len(payload))
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.ReadFull(br, got); err != nil {
			t.Fatalf("%s: echo: %v", proto, err)
		}
		if string(got) != string(payload) {
			t.Fatalf("%s: upgraded bytes changed", proto)
		}
		c.Close()
		if h := rec.last(t); h.Get("Impersonate-User") != "alice" || h.Get("Authorization") != "Bearer agent-own-token" {
			t.Fatalf("%s: upgrade reached the edge with %v", proto, h)
		}
	}
}

func dialRaw(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, 10*time.Second) }

// TestKubeProxyRefusals: an edge kubeconfig that already impersonates
// cannot be combined with impersonate mode (client-go would overwrite the
// caller), and an unreachable edge API server is a 503 Status that names
// no internal address.
func TestKubeProxyRefusals(t *testing.T) {
	rec := newRecorder(t)
	cfg := rec.restConfig()
	cfg.Impersonate.UserName = "someone"
	if _, err := newKubeProxy(cfg, IdentityImpersonate, ""); err == nil || !strings.Contains(err.Error(), "impersonates") {
		t.Fatalf("impersonating kubeconfig in impersonate mode: %v", err)
	}
	if _, err := newKubeProxy(cfg, IdentityAgent, ""); err != nil {
		t.Fatalf("impersonating kubeconfig in agent mode: %v", err)
	}
	if _, err := newKubeProxy(rec.restConfig(), "root", ""); err == nil {
		t.Fatal("an unknown identity mode was accepted")
	}

	dead := rec.restConfig()
	dead.Host = "https://127.0.0.1:1"
	h, err := newKubeProxy(dead, IdentityImpersonate, "")
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(h)
	defer front.Close()
	req, _ := http.NewRequest(http.MethodGet, front.URL+"/api", nil)
	req.Header.Set(protocol.HeaderEdgeUser, "alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var st metav1.Status
	if resp.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(body, &st) != nil || st.Code != 503 || strings.Contains(string(body), "127.0.0.1") {
		t.Fatalf("unreachable edge API server: %d %s", resp.StatusCode, body)
	}
}
