package sdk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/sdk/plugin"
)

// NewServer adapts a Provider to the plugin control protocol. Serve uses it
// inside the plugin process; sdk/testkit uses it in-process, so tests run the
// very lifecycle the hub drives.
func NewServer(p Provider) plugin.Server {
	return &server{p: p, m: p.Manifest()}
}

type server struct {
	p Provider
	m Manifest

	mu      sync.Mutex
	started bool
	http    *http.Server
	ln      net.Listener
	socket  string
	serveCh chan error // receives http.Server.Serve's result once
	failed  error      // set when Serve returned unexpectedly
}

func (s *server) Describe(context.Context) (*plugin.Descriptor, error) {
	return s.m.descriptor()
}

func (s *server) Start(ctx context.Context, cfg *plugin.Config) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("provider already started")
	}
	if err := s.m.Validate(); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	hc := hubConfigFrom(cfg)
	ln, err := listenSocket(cfg.SocketPath)
	if err != nil {
		return err
	}
	if st, ok := s.p.(Starter); ok {
		if err := st.Start(ctx, hc); err != nil {
			_ = ln.Close()
			_ = os.Remove(cfg.SocketPath)
			return fmt.Errorf("provider start hook: %w", err)
		}
	}
	s.http = &http.Server{
		Handler: s.handler(hc),
		// The hub bounds request lifetimes; streams and tunnels must not be
		// cut by a server-side write deadline.
		ReadHeaderTimeout: 0,
	}
	s.ln, s.socket, s.started = ln, cfg.SocketPath, true
	s.serveCh = make(chan error, 1)
	go func(srv *http.Server) { s.serveCh <- srv.Serve(ln) }(s.http)
	return nil
}

// handler routes the socket: UI under plugin.UIPrefix, backend under
// plugin.BackendPrefix, both stripped, with the HubConfig on the context.
func (s *server) handler(hc HubConfig) http.Handler {
	mux := http.NewServeMux()
	if ui := s.m.uiHandler(); ui != nil {
		mux.Handle(plugin.UIPrefix, http.StripPrefix(strings.TrimSuffix(plugin.UIPrefix, "/"), ui))
	}
	if s.m.Backend != nil {
		mux.Handle(plugin.BackendPrefix, http.StripPrefix(strings.TrimSuffix(plugin.BackendPrefix, "/"), s.m.Backend))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r.WithContext(WithHubConfig(r.Context(), hc)))
	})
}

func (s *server) Health(ctx context.Context) error {
	s.mu.Lock()
	started, ch := s.started, s.serveCh
	if s.failed == nil && ch != nil {
		select {
		case err := <-ch:
			s.failed = fmt.Errorf("http server stopped: %w", err)
		default:
		}
	}
	failed := s.failed
	s.mu.Unlock()
	if !started {
		return errors.New("not started")
	}
	if failed != nil {
		return failed
	}
	if hc, ok := s.p.(HealthChecker); ok {
		return hc.Healthy(ctx)
	}
	return nil
}

// Stop closes the socket to new requests, lets in-flight ones finish within
// ctx, then runs the provider's Stop hook.
func (s *server) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return nil
	}
	s.started = false
	var errs []error
	if err := s.http.Shutdown(ctx); err != nil {
		// Hijacked connections (websockets, tunnels) are not tracked by
		// Shutdown; Close at least stops the listener and idle conns.
		errs = append(errs, fmt.Errorf("http shutdown: %w", err), s.http.Close())
	}
	if s.failed == nil {
		<-s.serveCh // Serve has returned ErrServerClosed; no goroutine left.
	}
	_ = os.Remove(s.socket)
	if st, ok := s.p.(Stopper); ok {
		if err := st.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("provider stop hook: %w", err))
		}
	}
	return errors.Join(errs...)
}

// listenSocket listens on the hub-named socket after checking the hub kept
// its directory private: the socket carries trusted identity headers.
func listenSocket(path string) (net.Listener, error) {
	if path == "" || !filepath.IsAbs(path) {
		return nil, fmt.Errorf("socket path %q: must be absolute", path)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("socket dir: %w", err)
	}
	if perm := fi.Mode().Perm(); !fi.IsDir() || perm&0o077 != 0 {
		return nil, fmt.Errorf("socket dir %s: mode %o, want a 0700 directory", dir, perm)
	}
	// A stale socket from a crashed predecessor would make Listen fail.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("chmod socket: %w", err)
	}
	return ln, nil
}

func hubConfigFrom(cfg *plugin.Config) HubConfig {
	rc := cfg.RestConfig
	hc := HubConfig{HubURL: cfg.HubURL, DataDir: cfg.DataDir, Config: cfg.ProviderConfig}
	if rc.Host != "" {
		hc.RestConfig = &rest.Config{
			Host:        rc.Host,
			BearerToken: rc.BearerToken,
			TLSClientConfig: rest.TLSClientConfig{
				CAData:     rc.CAData,
				CertData:   rc.CertData,
				KeyData:    rc.KeyData,
				ServerName: rc.ServerName,
				Insecure:   rc.Insecure,
			},
		}
	}
	return hc
}
