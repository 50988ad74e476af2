// Command testprovider is a second real provider for the plugin host's
// tests: the SDK's example provider is always named "example", and a host
// test needs two differently named plugins. Its name is set at build time
// (-ldflags "-X main.name=...") so one source serves any number of them.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/wharfhub/wharf/sdk"
)

// name is the manifest name, overridden with -ldflags at build time.
var name = "testprovider"

// provider reports itself unhealthy while a file named "unhealthy" exists
// in its data dir, so tests can drive the hub's health-failure restart
// without reaching into the process.
type provider struct {
	mu      sync.Mutex
	dataDir string
}

func (p *provider) Start(_ context.Context, hc sdk.HubConfig) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dataDir = hc.DataDir
	return nil
}

func (p *provider) Healthy(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dataDir == "" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(p.dataDir, "unhealthy")); err == nil {
		return errors.New("unhealthy file present")
	}
	return nil
}

func (*provider) Manifest() sdk.Manifest {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pid", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"name": name, "pid": os.Getpid()})
	})
	return sdk.Manifest{Name: name, DisplayName: name, Version: "v0.0.1", Backend: mux, Replicas: sdk.ReplicasAny}
}

func main() { sdk.Serve(&provider{}) }
