package testkit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/sdk"
	"github.com/wharfhub/wharf/sdk/plugin"
)

// Options configure the hub stand-in. The zero value works: no users, so
// only public paths and the UI are reachable.
type Options struct {
	// Users maps bearer tokens to the identity the hub would verify for them.
	Users map[string]sdk.Identity
	// HubURL is HubConfig.HubURL and the base of CallerConfig. Default: the
	// stand-in's own URL.
	HubURL string
	// RestConfig is the provider's own identity (HubConfig.RestConfig).
	// Default: HubURL with the token "provider-token".
	RestConfig *plugin.RestConfig
	// Config is the operator's provider config (HubConfig.Config).
	Config []byte
	// DataDir defaults to a fresh t.TempDir().
	DataDir string
}

// Hub is a running stand-in with the provider behind it.
type Hub struct {
	// URL is the stand-in's base URL on loopback.
	URL string
	// SocketPath is the provider's unix socket, for tests that want to skip
	// the stand-in (and therefore the identity contract).
	SocketPath string
	// Descriptor is what the provider's Describe returned.
	Descriptor *plugin.Descriptor

	front *httptest.Server
}

// Start describes and starts p, serves it on a unix socket and fronts it with
// the stand-in. Everything is torn down in t.Cleanup. Failures are fatal.
func Start(t testing.TB, p sdk.Provider, opts Options) *Hub {
	t.Helper()
	ctx := context.Background() // t.Context is already cancelled in Cleanup
	srv := sdk.NewServer(p)
	d, err := srv.Describe(ctx)
	if err != nil {
		t.Fatalf("testkit: describe: %v", err)
	}
	// sun_path is short, and t.TempDir paths can be long: use a short
	// private directory (MkdirTemp creates it 0700).
	dir, err := os.MkdirTemp("", "wharf-tk-")
	if err != nil {
		t.Fatalf("testkit: socket dir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	h := &Hub{SocketPath: filepath.Join(dir, "http.sock"), Descriptor: d}

	tr := plugin.NewSocketTransport(h.SocketPath)
	h.front = httptest.NewUnstartedServer(newFront(d, opts.Users, tr))
	h.front.Start()
	h.URL = h.front.URL
	t.Cleanup(func() {
		h.front.Close()
		tr.CloseIdleConnections()
	})

	cfg := plugin.Config{
		HubURL:         opts.HubURL,
		DataDir:        opts.DataDir,
		ProviderConfig: opts.Config,
		SocketPath:     h.SocketPath,
	}
	if cfg.HubURL == "" {
		cfg.HubURL = h.URL
	}
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if opts.RestConfig != nil {
		cfg.RestConfig = *opts.RestConfig
	} else {
		cfg.RestConfig = plugin.RestConfig{Host: cfg.HubURL, BearerToken: "provider-token"}
	}
	if err := srv.Start(ctx, &cfg); err != nil {
		t.Fatalf("testkit: start: %v", err)
	}
	// Registered after the front's cleanup, so it runs first (LIFO): the
	// provider stops while the stand-in still exists, as with the real hub.
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Stop(sctx); err != nil {
			t.Errorf("testkit: stop: %v", err)
		}
	})
	return h
}

// Client returns an HTTP client for the stand-in.
func (h *Hub) Client() *http.Client { return h.front.Client() }

// BackendURL is the public URL of a backend path, e.g. "/whoami".
func (h *Hub) BackendURL(path string) string {
	return h.URL + "/services/providers/" + h.Descriptor.Name + "/" + strings.TrimPrefix(path, "/")
}

// UIURL is the public URL of a UI asset, e.g. "/main.js".
func (h *Hub) UIURL(path string) string {
	return h.URL + "/ui/providers/" + h.Descriptor.Name + "/" + strings.TrimPrefix(path, "/")
}
