package agent

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhub/wharf/providers/edges/protocol"
	"github.com/wharfhub/wharf/revdial"
)

// testHub is the provider's side of the agent protocol for one edge,
// built on the real revdial.Server behind real TLS: join, control tunnel
// (with credential checks, rotation and revocation) and pickups.
type testHub struct {
	t       *testing.T
	srv     *httptest.Server
	rd      *revdial.Server
	cluster string
	edge    string

	mu        sync.Mutex
	tokens    map[string]bool   // unspent join tokens
	creds     map[string]bool   // accepted agent credentials
	rotateTo  string            // next control handshake rotates to this
	joins     int               // successful exchanges
	refusals  int               // control handshakes refused
	connects  []http.Header     // control handshake headers
	joinBody  []string          // raw join request bodies
	dialers   chan struct{}     // a tunnel was adopted
	lastAgent *revdial.Dialer   // current tunnel
	seen      map[string]string // last value of each agent header
}

var testOptions = revdial.Options{
	KeepAliveInterval: 200 * time.Millisecond,
	ReadDeadline:      2 * time.Second,
	HandshakeTimeout:  5 * time.Second,
	PickupWait:        10 * time.Second,
}

var testBackoff = revdial.Backoff{Base: 20 * time.Millisecond, Max: 200 * time.Millisecond}

func newTestHub(t *testing.T, cluster, edge string) *testHub {
	h := &testHub{
		t: t, cluster: cluster, edge: edge,
		rd:      revdial.NewServer(protocol.BackendPrefix+strings.TrimSuffix(protocol.PickupPrefix, "/"), testOptions),
		tokens:  map[string]bool{},
		creds:   map[string]bool{},
		dialers: make(chan struct{}, 64),
		seen:    map[string]string{},
	}
	base := protocol.BackendPrefix + protocol.AgentBase(cluster, edge)
	h.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, protocol.BackendPrefix+protocol.PickupPrefix):
			if r.Header.Get("Authorization") != "" {
				http.Error(w, "pickups carry no credential", http.StatusBadRequest)
				return
			}
			h.rd.ServeHTTP(w, r)
		case r.URL.Path == base+"/join" && r.Method == http.MethodPost:
			h.join(w, r)
		case r.URL.Path == base+"/proxy":
			h.control(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	h.srv.EnableHTTP2 = true
	h.srv.StartTLS()
	t.Cleanup(func() { h.rd.Close(); h.srv.CloseClientConnections(); h.srv.Close() })
	return h
}

func (h *testHub) caPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw}))
}

// bundle mints a join token and returns its encoded bundle.
func (h *testHub) bundle(typ, token string) string {
	h.mu.Lock()
	h.tokens[token] = true
	h.mu.Unlock()
	return h.unmintedBundle(typ, token)
}

// unmintedBundle is a bundle whose token the hub never issued.
func (h *testHub) unmintedBundle(typ, token string) string {
	s, err := protocol.Bundle{HubURL: h.srv.URL, CA: h.caPEM(), Cluster: h.cluster, Edge: h.edge, Type: typ, Token: token}.Encode()
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func (h *testHub) join(w http.ResponseWriter, r *http.Request) {
	var req protocol.JoinRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.tokens[req.Token] {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"invalid or expired join token","reason":"Unauthorized","code":401}`))
		return
	}
	delete(h.tokens, req.Token) // single use
	h.joins++
	cred := fmt.Sprintf("cred-%d-of-%s", h.joins, h.edge)
	h.creds[cred] = true
	_ = json.NewEncoder(w).Encode(protocol.JoinResponse{Credential: cred})
}

func (h *testHub) control(w http.ResponseWriter, r *http.Request) {
	cred, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	h.mu.Lock()
	ok := h.creds[cred]
	var extra http.Header
	if ok && h.rotateTo != "" {
		// Rotation: the old credential stops working once the new one
		// is handed out.
		delete(h.creds, cred)
		h.creds[h.rotateTo] = true
		extra = http.Header{protocol.HeaderRotatedCredential: {h.rotateTo}}
		h.rotateTo = ""
	}
	if !ok {
		h.refusals++
	}
	h.connects = append(h.connects, r.Header.Clone())
	for _, k := range []string{protocol.HeaderAgentVersion, protocol.HeaderAgentHostname, protocol.HeaderAgentSSHHostKey} {
		h.seen[k] = r.Header.Get(k)
	}
	h.mu.Unlock()
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`))
		return
	}
	d, err := h.rd.UpgradeWithHeader(w, r, h.cluster+"/"+h.edge, extra)
	if err != nil {
		return
	}
	h.mu.Lock()
	h.lastAgent = d
	h.mu.Unlock()
	select {
	case h.dialers <- struct{}{}:
	default:
	}
}

// revokeAll forgets every credential and closes the tunnel, as deleting
// the Edge does.
func (h *testHub) revokeAll() {
	h.mu.Lock()
	h.creds = map[string]bool{}
	d := h.lastAgent
	h.mu.Unlock()
	if d != nil {
		d.Close()
	}
}

// dial opens a connection through the edge's current tunnel, waiting for
// one to exist.
func (h *testHub) dial(ctx context.Context) (net.Conn, error) {
	for {
		if d, ok := h.rd.Dialer(h.cluster + "/" + h.edge); ok {
			c, err := d.Dial(ctx)
			if err == nil {
				return c, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// httpClient sends HTTP requests through the tunnel, as the provider's
// egress does.
func (h *testHub) httpClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return h.dial(ctx) },
	}, Timeout: 60 * time.Second}
}

func (h *testHub) stat(f func(h *testHub) int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return f(h)
}

// eventually polls cond; the bound turns a hang into a failure and
// asserts nothing about speed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting until %s", what)
}
