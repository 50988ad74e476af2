package standalone

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/tenantfilter/auth"
	"github.com/wharfhub/wharf/providers/tenantfilter/core"
)

// shutdownGrace bounds how long SIGTERM waits for requests in flight
// (watches end at once: their contexts are cancelled).
const shutdownGrace = 15 * time.Second

// Server is the running standalone proxy.
type Server struct {
	cfg      *Config
	filter   Filter
	main     http.Handler
	metrics  http.Handler
	registry *prometheus.Registry
}

// New builds the filter, the authenticator and both handlers. Informers
// start under ctx.
func New(ctx context.Context, cfg *Config) (*Server, error) {
	newFilter := cfg.NewFilter
	if newFilter == nil {
		newFilter = defaultFilter
	}
	filter, err := newFilter(ctx, cfg.Rest, cfg.Core)
	if err != nil {
		return nil, fmt.Errorf("tenant filter: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg.Rest)
	if err != nil {
		return nil, fmt.Errorf("downstream client: %w", err)
	}
	ac := cfg.Auth
	ac.TokenReviews = cs.AuthenticationV1().TokenReviews()
	ac.SubjectAccessReviews = cs.AuthorizationV1().SubjectAccessReviews()
	authn, err := auth.New(ac)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := core.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, filter: filter, registry: reg}
	api := m.Middleware(authn.Handler(filter))
	mux := http.NewServeMux()
	s.health(mux)
	mux.Handle("/", api)
	s.main = mux
	mmux := http.NewServeMux()
	s.health(mmux)
	mmux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	s.metrics = mmux
	return s, nil
}

// health serves /healthz (the process answers) and /readyz (the caches
// synced) without authentication; they reveal nothing but ok.
func (s *Server) health(mux *http.ServeMux) {
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !s.filter.Ready() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
}

// Handler is the main listener's handler (health, then metrics → auth →
// filter), for tests.
func (s *Server) Handler() http.Handler { return s.main }

// Run serves until ctx ends, then shuts down gracefully.
func (s *Server) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := klog.FromContext(ctx)
	ln, err := net.Listen("tcp", s.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.cfg.ListenAddr, err)
	}
	mln, err := net.Listen("tcp", s.cfg.MetricsAddr)
	if err != nil {
		ln.Close()
		return fmt.Errorf("listen --metrics-addr %s: %w", s.cfg.MetricsAddr, err)
	}
	base := func(net.Listener) context.Context { return ctx }
	main := &http.Server{Handler: s.main, TLSConfig: s.cfg.TLS, BaseContext: base,
		ReadHeaderTimeout: 30 * time.Second}
	metrics := &http.Server{Handler: s.metrics, BaseContext: base, ReadHeaderTimeout: 30 * time.Second}

	errc := make(chan error, 3)
	var wg sync.WaitGroup
	serve := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	scheme := "http"
	if s.cfg.TLS != nil {
		scheme = "https"
		serve("listener", func() error { return main.ServeTLS(ln, "", "") })
	} else {
		serve("listener", func() error { return main.Serve(ln) })
	}
	serve("metrics", func() error { return metrics.Serve(mln) })
	if s.cfg.StatusController {
		serve("status controller", func() error { return runStatusController(ctx, s.cfg.Rest) })
	}
	log.Info("tenant filter listening", "addr", ln.Addr().String(), "scheme", scheme, "metrics", mln.Addr().String(),
		"statusController", s.cfg.StatusController)

	var runErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case runErr = <-errc:
		log.Error(runErr, "server failed, shutting down")
	}
	sctx, scancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer scancel()
	cancel()
	_ = main.Shutdown(sctx)
	_ = metrics.Shutdown(sctx)
	wg.Wait()
	return runErr
}
