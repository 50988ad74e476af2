package sdk_test

import (
	"context"
	"embed"
	"encoding/json"
	"net/http"

	"github.com/wharfhub/wharf/sdk"
)

var assets embed.FS // in a real provider: //go:embed dist

type hello struct{ greeting string }

func (h *hello) Manifest() sdk.Manifest {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /whoami", func(w http.ResponseWriter, r *http.Request) {
		id, _ := sdk.IdentityFrom(r) // trusted: only the hub reaches the socket
		_ = json.NewEncoder(w).Encode(map[string]any{"user": id.User, "greeting": h.greeting})
	})
	mux.HandleFunc("GET /namespaces", func(w http.ResponseWriter, r *http.Request) {
		// Act as the caller in their workspace, never as the provider.
		cfg, err := sdk.CallerConfig(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		_ = cfg // e.g. kubernetes.NewForConfig(cfg)
	})
	return sdk.Manifest{
		Name:        "hello",
		DisplayName: "Hello",
		Version:     "v0.1.0",
		UI:          assets,
		Backend:     mux,
	}
}

func (h *hello) Start(_ context.Context, hc sdk.HubConfig) error {
	var cfg struct {
		Greeting string `json:"greeting"`
	}
	if err := hc.DecodeConfig(&cfg); err != nil {
		return err
	}
	h.greeting = cfg.Greeting
	return nil
}

// A provider's main is one line; the hub launches the binary.
func ExampleServe() {
	sdk.Serve(&hello{})
}
