package server

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	netutils "k8s.io/utils/net"
)

// hookCounter wraps each HTTP/2 connection, counting them.
type hookCounter struct{ n atomic.Int32 }

type countedConn struct {
	net.Conn
	tc *tls.Conn
}

func (c *countedConn) ConnectionState() tls.ConnectionState { return c.tc.ConnectionState() }

func (h *hookCounter) wrap(tc *tls.Conn) net.Conn {
	h.n.Add(1)
	return &countedConn{Conn: tc, tc: tc}
}

// TestPublicServingLifecycle runs a real generic server on the handoff,
// its serving set up as Options.Config sets it up (applySecureServing):
// its post-start hook reaches it with the loopback client (through the
// real listener, the loopback SNI certificate and the HTTP/2 hook), any
// client gets ECDSA P-256 certificates both for the public name and for
// the loopback client's, and on stop RunWithContext returns once the real
// listener is closed.
func TestPublicServingLifecycle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	secure := genericoptions.NewSecureServingOptions().WithLoopback()
	secure.Listener = ln
	secure.BindAddress = netutils.ParseIPSloppy("127.0.0.1")
	secure.ServerCert.CertDirectory = t.TempDir()
	secure.ServerCert.PairName = "serving"
	secure.CurvePreferences = NewOptions().SecureServing.CurvePreferences
	// As Options.Config: the hub's ECDSA pair first, which upstream finds.
	if err := writeECDSAServingCert(secure.SecureServingOptions, "localhost", nil, []net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		t.Fatal(err)
	}
	if err := secure.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		t.Fatal(err)
	}
	cfg := genericapiserver.NewConfig(serializer.NewCodecFactory(runtime.NewScheme()))
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	if err := applySecureServing(secure, &cfg.SecureServing, &cfg.LoopbackClientConfig); err != nil {
		t.Fatal(err)
	}
	var hook hookCounter
	public := handOff(cfg.SecureServing, hook.wrap)
	s, err := cfg.Complete(nil).New("serving-test", genericapiserver.NewEmptyDelegate())
	if err != nil {
		t.Fatal(err)
	}
	reached := make(chan error, 1)
	if err := s.AddPostStartHook("loopback", func(ctx genericapiserver.PostStartHookContext) error {
		reached <- getHealthz(ctx, ctx.LoopbackClientConfig)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	prepared := s.PrepareRun()
	public.prepare(s)
	ran := make(chan error, 1)
	go func() { ran <- prepared.RunWithContext(ctx) }()
	if err := <-reached; err != nil {
		t.Fatalf("the loopback client did not reach the server: %v", err)
	}
	if hook.n.Load() < 1 {
		t.Fatal("the loopback client's HTTP/2 connection did not pass through the hook")
	}
	// A client of the public name gets the generated ECDSA certificate,
	// verified against the CA at the end of the cert file.
	ca, err := (&Options{SecureServing: secure}).servingCA()
	if err != nil || ca == nil {
		t.Fatalf("servingCA = %v, %v", ca, err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	assertECDSAServed(t, ln.Addr().String(), "localhost", roots)
	// So does any client that asks for the loopback client's name: it
	// must not be able to make the hub sign with an RSA key instead
	// (handshake floods). The certificate verifies against what the
	// loopback client trusts.
	loopbackRoots := x509.NewCertPool()
	if !loopbackRoots.AppendCertsFromPEM(cfg.LoopbackClientConfig.CAData) {
		t.Fatal("the loopback client config holds no CA data")
	}
	assertECDSAServed(t, ln.Addr().String(), genericapiserver.LoopbackClientServerNameOverride, loopbackRoots)
	// Only the cheap key exchanges: a client offering only P-384 or P-521
	// (6-29 times the work, and a replayed ClientHello costs its sender
	// nothing) is refused; one offering any default one is served.
	for _, tc := range []struct {
		curves []tls.CurveID
		ok     bool
	}{
		{[]tls.CurveID{tls.CurveP521}, false},
		{[]tls.CurveID{tls.CurveP384}, false},
		{[]tls.CurveID{tls.CurveP521, tls.CurveP256}, true},
		{[]tls.CurveID{tls.X25519}, true},
		{[]tls.CurveID{tls.X25519MLKEM768}, true},
	} {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{ServerName: "localhost", RootCAs: roots, CurvePreferences: tc.curves})
		if err == nil {
			_ = c.Close()
		}
		if (err == nil) != tc.ok {
			t.Errorf("a client offering %v: %v, want served %v", tc.curves, err, tc.ok)
		}
	}
	stop()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	select {
	case <-public.handoff.Done():
	default:
		t.Fatal("RunWithContext returned before the public server was done")
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		_ = c.Close()
		t.Fatal("the real listener still accepts after the generic server stopped")
	}
}

// assertECDSAServed makes a real TLS handshake with the server at addr for
// serverName, verifying its chain against roots, and fails unless every
// certificate served, the leaf first, has an ECDSA P-256 key.
func assertECDSAServed(t *testing.T, addr, serverName string, roots *x509.CertPool) {
	t.Helper()
	tc, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: serverName})
	if err != nil {
		t.Fatalf("TLS handshake for %s: %v", serverName, err)
	}
	certs := tc.ConnectionState().PeerCertificates
	_ = tc.Close()
	for _, c := range certs {
		if pub, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
			t.Fatalf("for %s the server served %q with a %T key, want ECDSA P-256", serverName, c.Subject.CommonName, c.PublicKey)
		}
	}
}

// getHealthz asks /healthz/ping (the post-start hooks still run) with the client c configures.
func getHealthz(ctx context.Context, c *rest.Config) error {
	hc, err := rest.HTTPClientFor(c)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Host+"/healthz/ping", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		return fmt.Errorf("/healthz/ping: %s over HTTP/%d", resp.Status, resp.ProtoMajor)
	}
	return nil
}

// writeECDSAServingCert writes the ECDSA pair exactly where upstream's
// MaybeDefaultWithSelfSignedCerts looks, for the names upstream would
// use, and never when upstream would not generate or a file is there.
func TestServingCertECDSA(t *testing.T) {
	altDNS := []string{"localhost", "hub.example.com"}
	altIPs := []net.IP{netutils.ParseIPSloppy("127.0.0.1"), netutils.ParseIPSloppy("::1")}
	cases := []struct {
		name string
		bind string
		// setup prepares the cert directory (and options); it returns
		// what the files must hold afterwards, nil for a fresh ECDSA pair.
		setup   func(t *testing.T, s *genericoptions.SecureServingOptions) map[string][]byte
		wantErr bool // from MaybeDefaultWithSelfSignedCerts
	}{
		{name: "fresh data dir", bind: "127.0.0.1"},
		{name: "bind address", bind: "10.1.2.3"},
		{name: "all addresses", bind: "0.0.0.0"},
		{name: "all IPv6 addresses", bind: "::"},
		{name: "existing RSA pair kept", bind: "127.0.0.1", setup: func(t *testing.T, s *genericoptions.SecureServingOptions) map[string][]byte {
			crt, key, err := certutil.GenerateSelfSignedCertKey("localhost", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			return writePair(t, s.ServerCert.CertDirectory, crt, key)
		}},
		{name: "lone certificate left for upstream to refuse", bind: "127.0.0.1", wantErr: true, setup: func(t *testing.T, s *genericoptions.SecureServingOptions) map[string][]byte {
			return writePair(t, s.ServerCert.CertDirectory, []byte("operator's cert"), nil)
		}},
		{name: "operator's files", bind: "127.0.0.1", setup: func(t *testing.T, s *genericoptions.SecureServingOptions) map[string][]byte {
			s.ServerCert.CertKey.CertFile = filepath.Join(t.TempDir(), "tls.crt")
			s.ServerCert.CertKey.KeyFile = filepath.Join(t.TempDir(), "tls.key")
			return map[string][]byte{"serving.crt": nil, "serving.key": nil}
		}},
	}
	newOptions := func(t *testing.T, bind string) *genericoptions.SecureServingOptions {
		s := genericoptions.NewSecureServingOptions()
		s.BindPort = 9443
		s.BindAddress = netutils.ParseIPSloppy(bind)
		s.ServerCert.CertDirectory = filepath.Join(t.TempDir(), "pki")
		s.ServerCert.PairName = "serving"
		return s
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newOptions(t, tc.bind)
			var want map[string][]byte
			if tc.setup != nil {
				want = tc.setup(t, s)
			}
			if err := writeECDSAServingCert(s, "localhost", altDNS, altIPs); err != nil {
				t.Fatal(err)
			}
			err := s.MaybeDefaultWithSelfSignedCerts("localhost", altDNS, altIPs)
			if (err != nil) != tc.wantErr {
				t.Fatalf("MaybeDefaultWithSelfSignedCerts: %v, want error %v", err, tc.wantErr)
			}
			if want != nil {
				for f, data := range want {
					got, err := os.ReadFile(filepath.Join(s.ServerCert.CertDirectory, f))
					if data == nil && !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("%s written (%v)", f, err)
					} else if data != nil && !bytes.Equal(got, data) {
						t.Errorf("%s replaced (%v)", f, err)
					}
				}
				return
			}
			if want := filepath.Join(s.ServerCert.CertDirectory, "serving.crt"); s.ServerCert.CertKey.CertFile != want {
				t.Fatalf("CertFile = %q, want %q", s.ServerCert.CertKey.CertFile, want)
			}
			pair, err := tls.LoadX509KeyPair(s.ServerCert.CertKey.CertFile, s.ServerCert.CertKey.KeyFile)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := pair.PrivateKey.(*ecdsa.PrivateKey); !ok {
				t.Fatalf("serving key is %T, want ECDSA", pair.PrivateKey)
			}
			ca, err := (&Options{SecureServing: &genericoptions.SecureServingOptionsWithLoopback{SecureServingOptions: s}}).servingCA()
			if err != nil || ca == nil {
				t.Fatalf("servingCA = %v, %v", ca, err)
			}
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(ca)
			leaf, err := x509.ParseCertificate(pair.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"localhost", "hub.example.com", "127.0.0.1", "::1"} {
				if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
					t.Errorf("does not verify for %s: %v", name, err)
				}
			}
			// The same names as the RSA certificate upstream generates
			// with the same options.
			up := newOptions(t, tc.bind)
			if err := up.MaybeDefaultWithSelfSignedCerts("localhost", altDNS, altIPs); err != nil {
				t.Fatal(err)
			}
			upPair, err := tls.LoadX509KeyPair(up.ServerCert.CertKey.CertFile, up.ServerCert.CertKey.KeyFile)
			if err != nil {
				t.Fatal(err)
			}
			upLeaf, err := x509.ParseCertificate(upPair.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(leaf.DNSNames, leaf.IPAddresses) != fmt.Sprint(upLeaf.DNSNames, upLeaf.IPAddresses) {
				t.Errorf("names %v %v, upstream's %v %v", leaf.DNSNames, leaf.IPAddresses, upLeaf.DNSNames, upLeaf.IPAddresses)
			}
			if fi, err := os.Stat(s.ServerCert.CertKey.KeyFile); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("key file mode %v (%v), want 0600", fi.Mode().Perm(), err)
			}
		})
	}
}

// writePair writes crt and key (nil: no file) as serving.crt/.key into
// dir and returns what they must keep holding (nil: must stay absent).
func writePair(t *testing.T, dir string, crt, key []byte) map[string][]byte {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"serving.crt": crt, "serving.key": key}
	for f, data := range files {
		if data == nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return files
}
