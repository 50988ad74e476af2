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
	"time"

	"github.com/wharfhub/wharf/sdk"
)

// name is the manifest name, overridden with -ldflags at build time.
var name = "testprovider"

// provider reports itself unhealthy while a file named "unhealthy" exists
// in its data dir, and stops answering health checks while one named "hang"
// exists, so tests can drive the hub's health-failure restarts without
// reaching into the process.
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
	dir := p.dataDir
	p.mu.Unlock()
	if dir == "" {
		return nil
	}
	if fileExists(filepath.Join(dir, "unhealthy")) {
		return errors.New("unhealthy file present")
	}
	// A hung plugin: never answer, whatever the caller's deadline, until
	// the hub kills the process.
	for fileExists(filepath.Join(dir, "hang")) {
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
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
