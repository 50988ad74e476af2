package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/edges/protocol"
	"github.com/wharfhub/wharf/revdial"
)

// DefaultSSHAddr is where a server edge's sshd is expected.
const DefaultSSHAddr = "127.0.0.1:22"

// Config is one agent run.
type Config struct {
	// StateDir holds state.json and the credential (0700).
	StateDir string
	// Join is an encoded join bundle, or "" to run from StateDir alone.
	Join string
	// RestConfig is the edge cluster's config for kubernetes edges; nil
	// means LoadRestConfig(Kubeconfig).
	RestConfig *rest.Config
	Kubeconfig string
	// SSHAddr is the sshd of a server edge; "" means DefaultSSHAddr.
	SSHAddr string
	// Identity is impersonate (default) or agent.
	Identity          IdentityMode
	ImpersonatePrefix string
	// Version is sent as the agent version; Hostname defaults to
	// os.Hostname.
	Version  string
	Hostname string
	// Options and Backoff tune the tunnel (tests shorten them); the zero
	// values are the spec's: 18 s keep-alives, 60 s deadline, 1–30 s.
	Options revdial.Options
	Backoff revdial.Backoff
}

// Run joins if needed and then keeps the edge's tunnel to the hub up until
// ctx is done. It dials out only: the agent opens no listening socket.
func Run(ctx context.Context, cfg Config) error {
	logger := klog.FromContext(ctx)
	if cfg.Identity == "" {
		cfg.Identity = IdentityImpersonate
	}
	if cfg.Identity != IdentityImpersonate && cfg.Identity != IdentityAgent {
		return fmt.Errorf("--identity %q: must be impersonate or agent", cfg.Identity)
	}
	if cfg.SSHAddr == "" {
		cfg.SSHAddr = DefaultSSHAddr
	}
	if cfg.Hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("hostname: %w", err)
		}
		cfg.Hostname = h
	}
	dir, err := openStateDir(cfg.StateDir)
	if err != nil {
		return err
	}
	st, creds, err := prepare(ctx, &cfg, dir)
	if err != nil {
		return err
	}
	tlsCfg, err := pinnedTLS(st.CA)
	if err != nil {
		return err
	}
	var handler http.Handler
	if st.Type == "kubernetes" {
		rc := cfg.RestConfig
		if rc == nil {
			if rc, err = LoadRestConfig(cfg.Kubeconfig); err != nil {
				return err
			}
		}
		if handler, err = newKubeProxy(rc, cfg.Identity, cfg.ImpersonatePrefix); err != nil {
			return err
		}
	}
	t := &tunnel{cfg: &cfg, st: st, creds: creds, spareToken: creds.spare, join: newJoiner(st, tlsCfg)}
	creds.spare = ""
	cl, err := revdial.NewClient(revdial.ClientConfig{
		URL:           "wss://" + strings.TrimPrefix(strings.TrimSuffix(st.HubURL, "/"), "https://") + protocol.BackendPrefix + protocol.AgentBase(st.Cluster, st.Edge) + "/proxy",
		ControlHeader: t.controlHeader,
		TLSConfig:     tlsCfg.clone(),
		Options:       cfg.Options,
		Backoff:       cfg.Backoff,
		OnConnect:     t.onConnect,
		OnState:       func(up bool, err error) { t.onState(logger, up, err) },
		RetryDelay:    t.retryDelay,
	})
	if err != nil {
		return err
	}
	logger.Info("Agent starting", "edge", st.Edge, "cluster", st.Cluster, "type", st.Type, "hub", st.HubURL, "identity", cfg.Identity)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		cl.Close()
	}()
	serveErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		serveErr <- t.serve(ctx, cl, handler)
	}()
	runErr := cl.Run(ctx)
	cancel()
	wg.Wait()
	if err := <-serveErr; err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return runErr
}

// serve answers the connections the provider dials through the tunnel.
func (t *tunnel) serve(ctx context.Context, ln net.Listener, handler http.Handler) error {
	if t.st.Type == "server" {
		return serveSSH(ctx, ln, t.cfg.SSHAddr)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		<-ctx.Done()
		_ = srv.Close()
	}()
	err := srv.Serve(ln)
	<-closed // Run cancels ctx before it waits for serve
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
