package revdial

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// fastOptions shortens every interval so that tests finish quickly while
// leaving room for the race detector on a busy machine.
func fastOptions() Options {
	return Options{
		KeepAliveInterval: 100 * time.Millisecond,
		ReadDeadline:      2 * time.Second,
		PickupWait:        20 * time.Second,
		HandshakeTimeout:  30 * time.Second,
		WriteTimeout:      5 * time.Second,
	}
}

// testTLS returns a server config with a fresh ECDSA certificate for
// loopback and a client config that trusts it. ECDSA keeps the thousand
// handshakes of the concurrency test affordable.
func testTLS(t testing.TB) (*tls.Config, *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "revdial-test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	srv := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	cli := &tls.Config{RootCAs: pool, ClientSessionCache: tls.NewLRUClientSessionCache(16)}
	return srv, cli
}

// hub is a TLS loopback HTTP server with a revdial Server mounted: agents
// open their control channel at /control?id=... and pickups at /pickup/.
type hub struct {
	t       testing.TB
	srv     *Server
	hs      *httptest.Server
	cliTLS  *tls.Config
	dialers chan *Dialer
	// upgradeErrs receives the errors of control upgrades that failed.
	upgradeErrs chan error
	// pickupHook, if set, replaces the pickup handler (to simulate a hub
	// that refuses or never answers).
	pickupHook http.HandlerFunc
	// via, if set, is the address agents dial instead of the hub's own
	// (a proxy in between).
	via string
}

func newHub(t testing.TB, opts Options) *hub {
	t.Helper()
	srvTLS, cliTLS := testTLS(t)
	return newHubOn(t, opts, nil, srvTLS, cliTLS)
}

// newHubOn starts the hub on ln, or on a fresh loopback port if ln is nil,
// with the given TLS configurations.
func newHubOn(t testing.TB, opts Options, ln net.Listener, srvTLS, cliTLS *tls.Config) *hub {
	t.Helper()
	h := &hub{t: t, srv: NewServer("/pickup", opts), dialers: make(chan *Dialer, 16), upgradeErrs: make(chan error, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("/control", func(w http.ResponseWriter, r *http.Request) {
		d, err := h.srv.Upgrade(w, r, r.URL.Query().Get("id"))
		if err != nil {
			select {
			case h.upgradeErrs <- err:
			default:
			}
			return
		}
		select {
		case h.dialers <- d:
		default:
		}
	})
	mux.HandleFunc("/pickup/", func(w http.ResponseWriter, r *http.Request) {
		if h.pickupHook != nil {
			h.pickupHook(w, r)
			return
		}
		h.srv.ServeHTTP(w, r)
	})
	h.hs = httptest.NewUnstartedServer(mux)
	if ln != nil {
		h.hs.Listener.Close()
		h.hs.Listener = ln
	}
	h.cliTLS = cliTLS
	h.hs.TLS = srvTLS
	h.hs.EnableHTTP2 = true // like a real hub; websockets must still get HTTP/1.1
	h.hs.StartTLS()
	t.Cleanup(h.close)
	return h
}

func (h *hub) close() {
	h.srv.Close()
	h.hs.CloseClientConnections()
	h.hs.Close()
}

func (h *hub) addr() string {
	if h.via != "" {
		return h.via
	}
	return h.hs.Listener.Addr().String()
}

func (h *hub) controlURL(id string) string {
	return "wss://" + h.addr() + "/control?id=" + id
}

// waitDialer returns the next dialer the hub adopted.
func (h *hub) waitDialer() *Dialer {
	h.t.Helper()
	select {
	case d := <-h.dialers:
		return d
	case <-time.After(30 * time.Second):
		h.t.Fatal("agent never connected")
		return nil
	}
}

// agent connects a Listener to h directly (no reconnects). open may wrap
// the default pickup opener; it is given the default one.
func (h *hub) agent(id string, opts Options, wrap func(PickupFunc) PickupFunc) (*Listener, *Dialer) {
	h.t.Helper()
	wd := &websocket.Dialer{TLSClientConfig: h.cliTLS, HandshakeTimeout: 10 * time.Second}
	ws, _, err := wd.Dial(h.controlURL(id), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	base := "wss://" + h.addr()
	open := PickupFunc(func(ctx context.Context, connPath string) (*websocket.Conn, error) {
		c, resp, err := wd.DialContext(ctx, base+connPath, nil)
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		return c, err
	})
	if wrap != nil {
		open = wrap(open)
	}
	l := NewListener(ws, open, opts)
	h.t.Cleanup(func() { l.Close() })
	return l, h.waitDialer()
}

// serve runs handle for every connection accepted from ln until ln fails.
// At cleanup it closes the listener and every connection still open, and
// waits for all of it.
func serve(t testing.TB, ln net.Listener, handle func(net.Conn)) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		open = map[net.Conn]struct{}{}
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open[c] = struct{}{}
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					mu.Lock()
					delete(open, c)
					mu.Unlock()
					c.Close()
				}()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
}

// echo copies everything back until EOF.
func echo(c net.Conn) { _, _ = io.Copy(c, c) }

// roundTrip writes line and reads one line back.
func roundTrip(c net.Conn, line string) (string, error) {
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSuffix(got, "\n"), err
}

// eventually polls cond until it holds. It bounds the wait only to turn a
// hang into a failure; it asserts nothing about speed.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting until %s", what)
}
