package plugins

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/sdk/plugin"
)

// Spec is one provider binary the hub should run.
type Spec struct {
	// Name is the configured name; the manifest must declare the same.
	// Empty for a --provider-dir entry until its manifest is read.
	Name string
	// Path is the binary.
	Path string
	// Checksum, when set, is the binary's pinned SHA-256.
	Checksum []byte
	// FromDir marks a --provider-dir entry, named after its manifest.
	FromDir bool
}

// Config is what the Host needs from the hub.
type Config struct {
	// DataDir is the hub's --data-dir. Sockets go under DataDir/plugins,
	// provider state under DataDir/providers.
	DataDir string
	// HubURL is the hub's internal URL, handed to every provider.
	HubURL string
	// RestConfig returns the provider's own credentials against the hub; it
	// is called at every (re)start, so it may mint short-lived tokens. Nil
	// hands the provider no credentials.
	RestConfig func(ctx context.Context, d *plugin.Descriptor) (plugin.RestConfig, error)
	// Specs are the binaries to run (Options.Specs).
	Specs []Spec
	// ProviderConfigs are the operator's config files by provider name
	// (Options.ProviderConfigs).
	ProviderConfigs map[string][]byte
	// Supervision holds the timings; zero value means DefaultSupervision.
	Supervision Supervision
	// PassEnv names the hub environment variables a plugin inherits. Nil
	// means DefaultPassEnv. Everything else, hub secrets included, stays out.
	PassEnv []string
	// Replica is this hub replica's name, reported by Holder.
	Replica string
	// Gate, when set, decides which hub replica runs each replicas: single
	// provider; nil runs every provider here (a single hub).
	Gate Gate
}

// DefaultPassEnv is what a plugin needs from the hub's environment to run
// ordinary Go code: find executables, a temp dir, a home, time zone,
// locale, and system TLS roots. Proxy variables are left out on purpose:
// they can carry credentials.
func DefaultPassEnv() []string {
	return []string{"PATH", "HOME", "TMPDIR", "TZ", "LANG", "LC_ALL", "SSL_CERT_FILE", "SSL_CERT_DIR"}
}

// provider is the Host's record of one plugin. Only the supervisor
// goroutine touches spec and client; h.mu guards status and transport.
type provider struct {
	spec   Spec
	name   string
	config []byte

	status    Status
	transport *http.Transport
}

// Host runs and supervises provider plugins. Create it with New, run it
// with Run; every other method is safe to call at any time from any
// goroutine.
type Host struct {
	cfg Config
	env []string

	mu      sync.Mutex // guards the fields below
	started bool       // Run was called; a second Run would double-launch
	byName  map[string]*provider
	order   []*provider
	subs    map[chan struct{}]struct{}

	counted bool // Run has added its providers to gatedRunning

	// handover is closed by Handover; gatedRunning counts the providers
	// that may still hold a Lease.
	handover     chan struct{}
	handoverOnce sync.Once
	gatedRunning sync.WaitGroup
}

// New checks cfg and registers the named providers in StateStarting, so
// Status answers before Run has launched anything.
func New(cfg Config) (*Host, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("plugins: empty data dir")
	}
	if cfg.Supervision == (Supervision{}) {
		cfg.Supervision = DefaultSupervision()
	}
	if err := errors.Join(cfg.Supervision.Validate()...); err != nil {
		return nil, fmt.Errorf("plugins: %w", err)
	}
	if cfg.PassEnv == nil {
		cfg.PassEnv = DefaultPassEnv()
	}
	h := &Host{cfg: cfg, env: passEnv(cfg.PassEnv), byName: map[string]*provider{}, subs: map[chan struct{}]struct{}{}, handover: make(chan struct{})}
	for _, s := range cfg.Specs {
		if s.Name == "" {
			continue // named by Run, from its manifest
		}
		if err := h.add(s, s.Name); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func (h *Host) add(s Spec, name string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, dup := h.byName[name]; dup {
		return fmt.Errorf("plugins: provider %q configured twice", name)
	}
	p := &provider{spec: s, name: name, config: h.cfg.ProviderConfigs[name],
		status: Status{Name: name, Path: s.Path, State: StateStarting}}
	h.byName[name] = p
	h.order = append(h.order, p)
	h.notifyLocked()
	return nil
}

// Run names the --provider-dir plugins, then launches and supervises every
// provider until ctx is done. It returns only after every plugin has been
// stopped and its process group killed, so the hub must wait for it before
// exiting. A provider failing never makes Run fail; the only error is
// calling Run a second time. --provider-dir entries appear in List only
// once Run has read their manifests.
func (h *Host) Run(ctx context.Context) error {
	h.mu.Lock()
	again := h.started
	h.started = true
	h.mu.Unlock()
	if again {
		return errors.New("plugins: Host.Run called twice")
	}
	log := klog.FromContext(ctx)
	h.cleanStaleSockets(ctx)
	for _, s := range h.cfg.Specs {
		if s.Name == "" {
			h.addFromDir(ctx, log, s)
		}
	}
	h.mu.Lock()
	ps := append([]*provider(nil), h.order...)
	h.mu.Unlock()
	for name := range h.cfg.ProviderConfigs {
		if _, ok := h.Status(name); !ok {
			log.Info("Provider config given for a provider that is not loaded", "provider", name)
		}
	}
	var wg sync.WaitGroup
	h.mu.Lock()
	h.gatedRunning.Add(len(ps))
	h.counted = true
	h.mu.Unlock()
	for _, p := range ps {
		wg.Go(func() {
			h.supervise(klog.NewContext(ctx, log.WithValues("provider", p.name)), p)
		})
	}
	// Failed providers end their goroutines early; Run still lasts until
	// ctx is done so its return always means "hub shutting down".
	<-ctx.Done()
	wg.Wait()
	return nil
}

// addFromDir learns a --provider-dir binary's name by launching it once
// and asking for its manifest. A binary that cannot say its name is still
// listed, as Failed under its file name, so the operator sees it.
func (h *Host) addFromDir(ctx context.Context, log klog.Logger, s Spec) {
	fallback := strings.TrimPrefix(filepath.Base(s.Path), DirPrefix)
	name, err := h.probeName(ctx, s)
	if err != nil {
		log.Error(err, "Provider in --provider-dir did not describe itself", "path", s.Path)
		if addErr := h.add(s, fallback); addErr == nil {
			p, _ := h.lookup(fallback)
			h.update(p, func(st *Status) { st.State, st.LastError = StateFailed, err.Error() })
		}
		return
	}
	s.Name = name
	if err := h.add(s, name); err != nil {
		// An explicit --provider of the same name wins over the directory.
		log.Info("Skipping provider in --provider-dir: name already configured", "provider", name, "path", s.Path)
	}
}

func (h *Host) probeName(ctx context.Context, s Spec) (string, error) {
	pctx, cancel := context.WithTimeout(ctx, h.cfg.Supervision.StartTimeout)
	defer cancel()
	c, err := plugin.Launch(pctx, plugin.Options{Path: s.Path, Checksum: s.Checksum, IsolateEnv: true, Env: h.env,
		Stderr: newLogWriter(klog.FromContext(ctx).WithValues("path", s.Path))})
	if err != nil {
		return "", fmt.Errorf("probe %s: %w", s.Path, err)
	}
	defer c.Kill()
	d, err := c.Describe(pctx)
	if err != nil {
		return "", fmt.Errorf("probe %s: %w", s.Path, err)
	}
	return d.Name, nil
}

func (h *Host) lookup(name string) (*provider, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.byName[name]
	return p, ok
}

// Transport returns the pooled transport to the named provider's socket,
// or false while it is not running. Proxies should ask per request: after
// a restart the transport is a new one, and the old one's idle connections
// (to a dead process) are closed.
func (h *Host) Transport(name string) (http.RoundTripper, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.byName[name]
	if !ok || p.transport == nil {
		return nil, false
	}
	return p.transport, true
}

// passEnv copies the named variables that are set in the hub's environment.
func passEnv(names []string) []string {
	var env []string
	for _, k := range names {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}
