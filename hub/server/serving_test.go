package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/client-go/rest"
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

// TestPublicServingLifecycle runs a real generic server on the handoff:
// its post-start hook reaches it with the loopback client (through the
// real listener, the loopback SNI certificate and the HTTP/2 hook), and
// on stop RunWithContext returns once the real listener is closed.
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
	if err := secure.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		t.Fatal(err)
	}
	cfg := genericapiserver.NewConfig(serializer.NewCodecFactory(runtime.NewScheme()))
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	if err := secure.ApplyTo(&cfg.SecureServing, &cfg.LoopbackClientConfig); err != nil {
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
