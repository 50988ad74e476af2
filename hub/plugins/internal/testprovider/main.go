// Command testprovider is a second real provider for the plugin host's
// tests: the SDK's example provider is always named "example", and a host
// test needs two differently named plugins. Its name is set at build time
// (-ldflags "-X main.name=...") so one source serves any number of them.
package main

import (
	"encoding/json"
	"net/http"
	"os"

	"github.com/wharfhub/wharf/sdk"
)

// name is the manifest name, overridden with -ldflags at build time.
var name = "testprovider"

type provider struct{}

func (provider) Manifest() sdk.Manifest {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pid", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"name": name, "pid": os.Getpid()})
	})
	return sdk.Manifest{Name: name, DisplayName: name, Version: "v0.0.1", Backend: mux, Replicas: sdk.ReplicasAny}
}

func main() { sdk.Serve(provider{}) }
