package serving

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// fixture is a Server on a loopback port with real TLS.
type fixture struct {
	ca               *testCA
	dir              string
	addr             string
	stop             chan struct{}
	stopped          <-chan struct{}
	listenerStopped  <-chan struct{}
	hooked           atomic.Int32
	certFile         string
	keyFile          string
	handoff          *Handoff
	clientCA         *dynamiccertificates.DynamicFileCAContent
	release, entered chan struct{}
	cleanup          []func()
	accepted         chan error // the handoff's Accept returned
}

type setup struct {
	clientCA bool // request client certificates signed by the fixture's CA
	hook     bool // wrap HTTP/2 connections (hookedConn)
	nilHook  bool // the hook refuses every connection
	handoff  bool // start through a Handoff instead of Serve
}

// hookedConn hides the *tls.Conn behind net.Conn, keeping only its
// ConnectionState, as hub/h2guard's wrapper does.
type hookedConn struct {
	net.Conn
	tc *tls.Conn
}

func (c *hookedConn) ConnectionState() tls.ConnectionState { return c.tc.ConnectionState() }

func start(t *testing.T, s setup) *fixture {
	t.Helper()
	f := &fixture{ca: newTestCA(t, "test-ca"), dir: t.TempDir(), stop: make(chan struct{}),
		release: make(chan struct{}), entered: make(chan struct{}, 1)}
	c, k := f.ca.issue(t, "serving", 1, false)
	f.certFile, f.keyFile = writeFile(t, f.dir, "tls.crt", c), writeFile(t, f.dir, "tls.key", k)
	cert, err := dynamiccertificates.NewDynamicServingContentFromFiles("serving-cert", f.certFile, f.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	info := &genericapiserver.SecureServingInfo{Cert: cert}
	if s.clientCA {
		caFile := writeFile(t, f.dir, "client-ca.crt", f.ca.pem)
		if f.clientCA, err = dynamiccertificates.NewDynamicCAContentFromFile("client-ca", caFile); err != nil {
			t.Fatal(err)
		}
		info.ClientCA = f.clientCA
	}
	srv := &Server{Info: info, Handler: http.HandlerFunc(f.serveHTTP), ShutdownTimeout: time.Minute}
	switch {
	case s.nilHook:
		srv.WrapHTTP2 = func(*tls.Conn) net.Conn { f.hooked.Add(1); return nil }
	case s.hook:
		srv.WrapHTTP2 = func(tc *tls.Conn) net.Conn { f.hooked.Add(1); return &hookedConn{Conn: tc, tc: tc} }
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	if s.handoff {
		// As the generic server does: Accept, which starts srv and
		// returns once it is done.
		f.handoff = NewHandoff(ln)
		f.handoff.SetServer(srv)
		f.accepted = make(chan error, 1)
		go func() {
			c, err := f.handoff.Accept()
			if c != nil {
				_ = c.Close()
			}
			f.accepted <- err
		}()
		t.Cleanup(func() { f.closeClients(); _ = f.handoff.Close(); <-f.handoff.Done() })
		return f
	}
	if f.stopped, f.listenerStopped, err = srv.Serve(ln, f.stop); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.closeClients()
		select {
		case <-f.stop:
		default:
			close(f.stop)
		}
		<-f.stopped
	})
	return f
}

func (f *fixture) closeClients() {
	for _, c := range f.cleanup {
		c()
	}
}

// serveHTTP answers with the protocol and the user x509 authentication
// finds; /slow waits for release.
func (f *fixture) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/slow" {
		f.entered <- struct{}{}
		<-f.release
	}
	user := "-"
	if f.clientCA != nil {
		authn := x509request.NewDynamic(f.clientCA.VerifyOptions, x509request.CommonNameUserConversion)
		resp, ok, err := authn.AuthenticateRequest(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		if ok {
			user = resp.User.GetName()
		}
	}
	_, _ = fmt.Fprintf(w, "HTTP/%d %s", r.ProtoMajor, user)
}

// client returns an HTTP client trusting the fixture's CA, speaking h2 or
// HTTP/1.1 only, presenting cert if given.
func (f *fixture) client(h2 bool, cert *tls.Certificate) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(f.ca.pem)
	tc := &tls.Config{RootCAs: pool}
	if cert != nil {
		// Sent whatever CAs the server names, so that an untrusted one
		// reaches the authenticator too.
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	tr := &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	// Closed before the server stops, which then need not wait a second
	// for the client to answer its GOAWAY.
	f.cleanup = append(f.cleanup, tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func (f *fixture) get(t *testing.T, c *http.Client, path string) (string, error) {
	t.Helper()
	resp, err := c.Get("https://" + f.addr + path)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	return string(body), nil
}

func TestServeProtocolsAndHook(t *testing.T) {
	for _, tc := range []struct {
		name       string
		setup      setup
		h2         bool
		want       string
		wantHooked int32
	}{
		{name: "h2 without hook", setup: setup{}, h2: true, want: "HTTP/2 -"},
		{name: "h2 through hook", setup: setup{hook: true}, h2: true, want: "HTTP/2 -", wantHooked: 1},
		{name: "HTTP/1.1 skips hook", setup: setup{hook: true}, want: "HTTP/1 -"},
		{name: "h2 through hook, via handoff", setup: setup{hook: true, handoff: true}, h2: true, want: "HTTP/2 -", wantHooked: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := start(t, tc.setup)
			c := f.client(tc.h2, nil)
			// Three requests share one connection: one hook call.
			for i := 0; i < 3; i++ {
				got, err := f.get(t, c, "/")
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Fatalf("got %q, want %q", got, tc.want)
				}
			}
			if n := f.hooked.Load(); n != tc.wantHooked {
				t.Fatalf("hook called %d times, want %d", n, tc.wantHooked)
			}
		})
	}
}

func TestHookPerConnection(t *testing.T) {
	f := start(t, setup{hook: true})
	for i := 1; i <= 3; i++ {
		if _, err := f.get(t, f.client(true, nil), "/"); err != nil {
			t.Fatal(err)
		}
		if n := f.hooked.Load(); n != int32(i) {
			t.Fatalf("after %d connections the hook was called %d times", i, n)
		}
	}
}

func TestHookRefusesConnection(t *testing.T) {
	f := start(t, setup{nilHook: true})
	if got, err := f.get(t, f.client(true, nil), "/"); err == nil {
		t.Fatalf("a connection the hook refused was served: %q", got)
	}
	if got, err := f.get(t, f.client(false, nil), "/"); err != nil || got != "HTTP/1 -" {
		t.Fatalf("HTTP/1.1: got %q, %v", got, err)
	}
}

func TestClientCertificateThroughHook(t *testing.T) {
	for _, tc := range []struct {
		name string
		h2   bool
		cert bool
		want string
	}{
		{name: "h2 with certificate", h2: true, cert: true, want: "HTTP/2 alice"},
		{name: "h2 without certificate", h2: true, want: "HTTP/2 -"},
		{name: "HTTP/1.1 with certificate", cert: true, want: "HTTP/1 alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := start(t, setup{clientCA: true, hook: true})
			var cert *tls.Certificate
			if tc.cert {
				c := f.ca.clientCert(t, "alice")
				cert = &c
			}
			got, err := f.get(t, f.client(tc.h2, cert), "/")
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestUntrustedClientCertificate: a certificate of another CA connects
// (certificates are requested, not required) but authenticates nobody.
func TestUntrustedClientCertificate(t *testing.T) {
	f := start(t, setup{clientCA: true, hook: true})
	other := newTestCA(t, "other-ca").clientCert(t, "mallory")
	if got, err := f.get(t, f.client(true, &other), "/"); err == nil {
		t.Fatalf("a certificate of another CA authenticated: %q", got)
	}
}

func TestServingCertificateReload(t *testing.T) {
	f := start(t, setup{hook: true})
	if serial := f.servedSerial(t); serial != 1 {
		t.Fatalf("serial %d, want 1", serial)
	}
	c, k := f.ca.issue(t, "serving", 2, false)
	writeFile(t, f.dir, "tls.key", k)
	writeFile(t, f.dir, "tls.crt", c)
	// The file watch notices within moments, the periodic check within a
	// minute; the bound is only the test's.
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 3*time.Minute, true,
		func(context.Context) (bool, error) { return f.servedSerial(t) == 2, nil })
	if err != nil {
		t.Fatalf("the new serving certificate was never served: %v", err)
	}
}

// servedSerial is the serial number of the certificate a new connection
// sees.
func (f *fixture) servedSerial(t *testing.T) int64 {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(f.ca.pem)
	conn, err := tls.Dial("tcp", f.addr, &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}
