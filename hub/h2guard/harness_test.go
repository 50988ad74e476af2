package h2guard

import (
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
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"k8s.io/component-base/metrics/testutil"
	testingclock "k8s.io/utils/clock/testing"
)

// testServer is a real x/net HTTP/2 server over TLS on loopback, each
// connection wrapped by a guard, configured as the hub's (256 KiB frames
// and stream windows, the default 1 MiB header bound).
type testServer struct {
	addr  string
	pool  *x509.CertPool
	guard *Guard
	clock *testingclock.FakeClock
	mu    sync.Mutex
	conns []net.Conn // what Wrap returned, in accept order
}

func startServer(t *testing.T, o Options, exempt func(string) bool) *testServer {
	t.Helper()
	cert, pool := selfSigned(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	clk := testingclock.NewFakeClock(time.Now())
	s := &testServer{addr: ln.Addr().String(), pool: pool, guard: New(o, exempt, clk), clock: clk}
	h2 := &http2.Server{MaxReadFrameSize: 256 << 10, MaxUploadBufferPerStream: 256 << 10}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{http2.NextProtoTLS}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				tc := tls.Server(c, cfg)
				if err := tc.Handshake(); err != nil {
					_ = c.Close()
					return
				}
				w := s.guard.Wrap(tc)
				s.mu.Lock()
				s.conns = append(s.conns, w)
				s.mu.Unlock()
				h2.ServeConn(w, &http2.ServeConnOpts{Handler: http.HandlerFunc(answer)})
			}()
		}
	}()
	return s
}

// answer reads the body, then writes ?n= bytes; 421 if the request came
// without its TLS state (the wrapper must delegate ConnectionState).
func answer(w http.ResponseWriter, r *http.Request) {
	if r.TLS == nil {
		w.WriteHeader(http.StatusMisdirectedRequest)
		return
	}
	got, _ := io.Copy(io.Discard, r.Body)
	w.Header().Set("X-Body-Bytes", strconv.FormatInt(got, 10))
	n, _ := strconv.Atoi(r.URL.Query().Get("n"))
	buf := make([]byte, 32<<10)
	for n > 0 {
		k := min(n, len(buf))
		if _, err := w.Write(buf[:k]); err != nil {
			return
		}
		n -= k
	}
}

// client is an ordinary Go HTTP/2 client of s (one connection).
func (s *testServer) client() *http.Client {
	return &http.Client{Transport: &http2.Transport{TLSClientConfig: &tls.Config{RootCAs: s.pool, ServerName: "127.0.0.1"}}}
}

// dial opens a raw TLS h2 connection to s.
func (s *testServer) dial(t *testing.T) *tls.Conn {
	t.Helper()
	c, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: s.pool, ServerName: "127.0.0.1", NextProtos: []string{http2.NextProtoTLS}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// spent is what the i-th connection has been charged in all, and what
// its bucket holds now. Read it once the connection is idle.
func (s *testServer) spent(t *testing.T, i int) (total int64, left float64) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.conns[i].(*conn)
	if !ok || c.bucket == nil {
		t.Fatalf("connection %d is not guarded by a budget", i)
	}
	return c.spent, c.bucket.TokensAt(s.clock.Now())
}

// waiting reports whether the i-th connection waits for room hub-wide.
func (s *testServer) waiting(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i >= len(s.conns) {
		return false
	}
	c := s.conns[i].(*conn)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiting
}

func closedCount(t *testing.T, reason string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(connsClosed.WithLabelValues(reason))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func closedCounts(t *testing.T) map[string]float64 {
	m := map[string]float64{}
	for _, r := range []string{reasonHeaderBytes, reasonFrames, reasonBlockSize, reasonTimeout, reasonOpenBlocks, reasonHPACK} {
		m[r] = closedCount(t, r)
	}
	return m
}

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "h2guard-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
