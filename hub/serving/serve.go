package serving

import (
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"golang.org/x/net/http2"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/endpoints/metrics"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"
)

// Server serves a secure listener the way k8s.io/apiserver's
// SecureServingInfo.Serve and RunServer do, but hands each HTTP/2
// connection, once TLS has decrypted it, through WrapHTTP2.
type Server struct {
	// Info holds the TLS material and HTTP/2 options (certificates, client
	// CA, TLS versions and suites, HTTP2MaxStreamsPerConnection,
	// DisableHTTP2). Its Listener is not used.
	Info *genericapiserver.SecureServingInfo
	// Handler answers every request.
	Handler http.Handler
	// ShutdownTimeout bounds the graceful shutdown once stopCh closes.
	ShutdownTimeout time.Duration
	// WrapHTTP2, if set, is given each connection that negotiated h2 and
	// returns the connection the HTTP/2 server reads and writes instead.
	// It runs on the connection's own goroutine after the TLS handshake and
	// before the client preface is read. Its result should keep c's
	// RemoteAddr (every request's RemoteAddr, by which hub/rapidreset finds
	// the connection) and implement ConnectionState() tls.ConnectionState:
	// x/net's HTTP/2 server checks HTTP/2's TLS requirements on it and
	// fills each request's TLS field from it (net/http's handler falls back
	// to c's own, so client certificates authenticate either way). A nil
	// result closes the connection. HTTP/1.1 connections never see it.
	WrapHTTP2 func(c *tls.Conn) net.Conn
}

// keepAlivePeriod is upstream's TCP keep-alive for accepted connections,
// so that dead peers' connections go away.
const keepAlivePeriod = 3 * time.Minute

// resourceBody99Percentile is upstream's HTTP/2 frame and per-stream
// window: most API objects fit in one frame, and a connection's window
// (this times its streams) stays small.
const resourceBody99Percentile = 256 * 1024

// Serve serves ln until stopCh closes; it does not block. Then the server
// stops listening (listenerStoppedCh closes) and waits up to
// ShutdownTimeout for the requests in flight, hijacked ones excepted
// (stoppedCh closes). As upstream, the process panics if ln fails before
// stopCh closes: a replica that no longer listens must not pass for one
// that does.
func (s *Server) Serve(ln net.Listener, stopCh <-chan struct{}) (stoppedCh, listenerStoppedCh <-chan struct{}, err error) {
	if ln == nil {
		return nil, nil, fmt.Errorf("serving: listener must not be nil")
	}
	srv, err := s.httpServer(ln.Addr().String(), stopCh)
	if err != nil {
		return nil, nil, err
	}
	klog.InfoS("Serving securely, HTTP/2 through the hub's connection hook", "address", srv.Addr, "hook", s.WrapHTTP2 != nil)
	stopped, listenerStopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		<-stopCh
		ctx, cancel := context.WithTimeout(context.Background(), s.ShutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			klog.ErrorS(err, "Shutting the secure server down")
		}
	}()
	go func() {
		defer utilruntime.HandleCrash()
		defer close(listenerStopped)
		err := srv.Serve(tls.NewListener(keepAliveListener{ln}, srv.TLSConfig))
		select {
		case <-stopCh:
			klog.InfoS("Stopped listening", "address", ln.Addr().String())
		default:
			panic(fmt.Sprintf("stopped listening on %s: %v", ln.Addr(), err))
		}
	}()
	return stopped, listenerStopped, nil
}

// httpServer builds the net/http and x/net HTTP/2 servers with upstream's
// settings, then replaces the h2 entry ConfigureServer made by one that
// calls the hook.
func (s *Server) httpServer(addr string, stopCh <-chan struct{}) (*http.Server, error) {
	srv := &http.Server{
		Addr:           addr,
		Handler:        s.Handler,
		MaxHeaderBytes: 1 << 20,
		TLSConfig:      tlsConfig(s.Info, stopCh),
		// http.DefaultTransport's keep-alive; just shy of upstream's
		// longest request timeout.
		IdleTimeout:       90 * time.Second,
		ReadHeaderTimeout: 32 * time.Second,
		// Handshake errors are anybody's noise: counted and logged at V(5).
		ErrorLog: log.New(handshakeErrorWriter{out: os.Stderr}, "", 0),
	}
	// Upstream bounds the header values per request (MaxHeaderValueCount)
	// only when built with Go 1.27; this Go's net/http has no such field.
	if s.Info.DisableHTTP2 {
		return srv, nil
	}
	h2 := &http2.Server{
		IdleTimeout:              90 * time.Second,
		MaxUploadBufferPerStream: resourceBody99Percentile,
		MaxReadFrameSize:         resourceBody99Percentile,
		// What clients assume before the server's SETTINGS arrive.
		MaxConcurrentStreams: 100,
	}
	if s.Info.HTTP2MaxStreamsPerConnection > 0 {
		h2.MaxConcurrentStreams = uint32(s.Info.HTTP2MaxStreamsPerConnection)
	}
	h2.MaxUploadBufferPerConnection = h2.MaxUploadBufferPerStream * int32(h2.MaxConcurrentStreams)
	// ConfigureServer also registers the GOAWAY of graceful shutdown and
	// tracks the connections ServeConn serves for it: keep both.
	if err := http2.ConfigureServer(srv, h2); err != nil {
		return nil, fmt.Errorf("configuring HTTP/2: %w", err)
	}
	srv.TLSNextProto[http2.NextProtoTLS] = s.serveHTTP2(h2)
	return srv, nil
}

// baseContexter is the unadvertised method net/http's TLSNextProto handler
// has, returning the connection's base context (BaseContext and
// ConnContext applied); x/net's own h2 entry reads it the same way.
type baseContexter interface {
	BaseContext() context.Context
}

// serveHTTP2 is the h2 entry of TLSNextProto: ServeConn as x/net's, on the
// hook's connection.
func (s *Server) serveHTTP2(h2 *http2.Server) func(*http.Server, *tls.Conn, http.Handler) {
	return func(hs *http.Server, tc *tls.Conn, h http.Handler) {
		var c net.Conn = tc
		if s.WrapHTTP2 != nil {
			if c = s.WrapHTTP2(tc); c == nil {
				_ = tc.Close()
				return
			}
		}
		var ctx context.Context
		if bc, ok := h.(baseContexter); ok {
			ctx = bc.BaseContext()
		}
		h2.ServeConn(c, &http2.ServeConnOpts{Context: ctx, Handler: h, BaseConfig: hs})
	}
}

// keepAliveListener turns TCP keep-alive on for accepted TCP connections,
// as upstream's listener does (a wrapped connection keeps its own).
type keepAliveListener struct{ net.Listener }

func (l keepAliveListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetKeepAlive(true)
		_ = tc.SetKeepAlivePeriod(keepAlivePeriod)
	}
	return c, nil
}

// handshakeErrorPrefix starts net/http's log line for a failed handshake.
const handshakeErrorPrefix = "http: TLS handshake error"

// handshakeErrorWriter counts failed TLS handshakes in upstream's metric
// and logs them at V(5) only, so that anybody's failed handshakes cannot
// flood the log; the server's other errors go to out.
type handshakeErrorWriter struct{ out *os.File }

func (w handshakeErrorWriter) Write(p []byte) (int, error) {
	if !strings.Contains(string(p), handshakeErrorPrefix) {
		return w.out.Write(p)
	}
	klog.V(5).Info(string(p))
	metrics.TLSHandshakeErrors.Inc()
	return len(p), nil
}
