package serving

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// TestSameAsUpstream serves the same configuration with upstream's
// SecureServingInfo.Serve and with Server, and compares what clients see:
// which TLS versions and protocols are negotiated, and the HTTP/2
// server's SETTINGS.
func TestSameAsUpstream(t *testing.T) {
	for _, tc := range []struct {
		name   string
		adjust func(*genericapiserver.SecureServingInfo)
	}{
		{name: "defaults", adjust: func(*genericapiserver.SecureServingInfo) {}},
		{name: "42 streams per connection", adjust: func(i *genericapiserver.SecureServingInfo) { i.HTTP2MaxStreamsPerConnection = 42 }},
		{name: "HTTP/1.1 only", adjust: func(i *genericapiserver.SecureServingInfo) { i.DisableHTTP2 = true }},
		{name: "TLS 1.3 at least", adjust: func(i *genericapiserver.SecureServingInfo) { i.MinTLSVersion = tls.VersionTLS13 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ca := newTestCA(t, "test-ca")
			dir := t.TempDir()
			c, k := ca.issue(t, "serving", 1, false)
			certFile, keyFile := writeFile(t, dir, "tls.crt", c), writeFile(t, dir, "tls.key", k)
			info := func() *genericapiserver.SecureServingInfo {
				cert, err := dynamiccertificates.NewDynamicServingContentFromFiles("serving-cert", certFile, keyFile)
				if err != nil {
					t.Fatal(err)
				}
				i := &genericapiserver.SecureServingInfo{Cert: cert}
				tc.adjust(i)
				return i
			}
			handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})
			stop := make(chan struct{})
			upstream, ours := info(), info()
			var err error
			if upstream.Listener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			upStopped, _, err := upstream.Serve(handler, time.Minute, stop)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			s := &Server{Info: ours, Handler: handler, ShutdownTimeout: time.Minute,
				WrapHTTP2: func(tc *tls.Conn) net.Conn { return &hookedConn{Conn: tc, tc: tc} }}
			ourStopped, _, err := s.Serve(ln, stop)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { close(stop); <-upStopped; <-ourStopped }()
			want := observe(t, ca, upstream.Listener.Addr().String())
			if got := observe(t, ca, ln.Addr().String()); got != want {
				t.Fatalf("clients see\n%s\nupstream's clients see\n%s", got, want)
			}
		})
	}
}

// observe returns what a few clients see of the server at addr.
func observe(t *testing.T, ca *testCA, addr string) string {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.pem)
	var b strings.Builder
	for _, tc := range []struct {
		name string
		cfg  func() *tls.Config
	}{
		{name: "h2 or http/1.1", cfg: func() *tls.Config { return &tls.Config{NextProtos: []string{"h2", "http/1.1"}} }},
		{name: "TLS 1.2 only", cfg: func() *tls.Config { return &tls.Config{MaxVersion: tls.VersionTLS12, NextProtos: []string{"h2"}} }},
		{name: "TLS 1.1 only", cfg: func() *tls.Config { return &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11} }},
		{name: "no ALPN", cfg: func() *tls.Config { return &tls.Config{} }},
	} {
		cfg := tc.cfg()
		cfg.RootCAs = pool
		conn, err := tls.Dial("tcp", addr, cfg)
		if err != nil {
			fmt.Fprintf(&b, "%s: refused\n", tc.name)
			continue
		}
		st := conn.ConnectionState()
		fmt.Fprintf(&b, "%s: version %x, protocol %q", tc.name, st.Version, st.NegotiatedProtocol)
		if st.NegotiatedProtocol == "h2" {
			fmt.Fprintf(&b, ", settings %s", settingsOf(t, conn))
		}
		b.WriteString("\n")
		_ = conn.Close()
	}
	// The request header bound (MaxHeaderBytes) over HTTP/1.1.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool},
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}}
	defer c.CloseIdleConnections()
	for _, size := range []int{1 << 19, 3 << 19} {
		req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Big", strings.Repeat("a", size))
		resp, err := c.Do(req)
		if err != nil {
			fmt.Fprintf(&b, "HTTP/1.1 header of %d bytes: %v\n", size, err)
			continue
		}
		_ = resp.Body.Close()
		fmt.Fprintf(&b, "HTTP/1.1 header of %d bytes: %d\n", size, resp.StatusCode)
	}
	return b.String()
}

// settingsOf sends the HTTP/2 preface and returns the server's first
// SETTINGS and how far it opens the connection's window.
func settingsOf(t *testing.T, conn *tls.Conn) string {
	t.Helper()
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	f, err := fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok {
		t.Fatalf("first frame %v, want SETTINGS", f)
	}
	var s []string
	_ = sf.ForeachSetting(func(st http2.Setting) error {
		s = append(s, st.String())
		return nil
	})
	// The connection's window (MaxUploadBufferPerConnection) is opened
	// before the server reads anything: it comes before the PING's answer.
	if err := fr.WritePing(false, [8]byte{1}); err != nil {
		t.Fatal(err)
	}
	window := "none"
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if wu, ok := f.(*http2.WindowUpdateFrame); ok && wu.StreamID == 0 {
			window = fmt.Sprint(wu.Increment)
		}
		if p, ok := f.(*http2.PingFrame); ok && p.IsAck() {
			break
		}
	}
	return strings.Join(s, " ") + ", connection window +" + window
}
