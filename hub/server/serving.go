package server

import (
	"crypto/tls"
	"net"
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/wharfhub/wharf/hub/serving"
)

// publicServing is how the hub serves its public listener (hub/serving):
// the real listener, already wrapped by the connection limits and the
// rapid-reset listener, is served by the hub itself, and the generic
// server gets a stand-in that keeps its lifecycle (readyz, shutdown delay,
// pre-shutdown hooks, drain) in charge of when serving stops.
type publicServing struct {
	handoff *serving.Handoff
	// wrapHTTP2 is given each decrypted HTTP/2 connection of the public
	// listener before Go's HTTP/2 server reads it (serving.Server's
	// WrapHTTP2); nil: none. Set in Options.Config (config.go).
	wrapHTTP2 func(c *tls.Conn) net.Conn
}

// handOff swaps ss's listener for the stand-in; nil when there is no
// listener to serve (upstream then fails as it would).
func handOff(ss *genericapiserver.SecureServingInfo, wrapHTTP2 func(*tls.Conn) net.Conn) *publicServing {
	if ss == nil || ss.Listener == nil {
		return nil
	}
	p := &publicServing{handoff: serving.NewHandoff(ss.Listener), wrapHTTP2: wrapHTTP2}
	ss.Listener = p.handoff
	return p
}

// prepare names the server that serves the real listener once the generic
// server s begins to serve: its TLS material and HTTP/2 options, its
// handler (the whole chain, after PrepareRun), its shutdown timeout.
func (p *publicServing) prepare(s *genericapiserver.GenericAPIServer) {
	if p == nil {
		return
	}
	p.handoff.SetServer(&serving.Server{
		Info:            s.SecureServingInfo,
		Handler:         s.Handler,
		ShutdownTimeout: shutdownTimeout(s),
		WrapHTTP2:       p.wrapHTTP2,
	})
}

// close stops serving if the generic server never did (RunWithContext
// failed before it listened); after a normal run it is done already.
func (p *publicServing) close() {
	if p != nil {
		_ = p.handoff.Close()
	}
}

// shutdownTimeout is the bound upstream's RunWithContext gives its own
// http.Server's Shutdown.
func shutdownTimeout(s *genericapiserver.GenericAPIServer) time.Duration {
	if s.ShutdownSendRetryAfter {
		// Upstream: in-flight requests are drained already; net/http
		// waits a second for a GOAWAY's answer.
		return 2 * time.Second
	}
	return s.ShutdownTimeout
}
