// Command hello is the sample provider and living documentation of the SDK:
// a UI custom element, /whoami, server-sent events, a websocket echo, a CRD
// and a controller that answers it in every workspace that enabled hello
// (controller.go), whose cache GET /greetings reads.
package main

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/websocket"

	"github.com/wharfhub/wharf/sdk"
	"github.com/wharfhub/wharf/sdk/fairqueue"
)

//go:embed ui greetings.yaml
var files embed.FS

type hello struct {
	// replier is set by Start; the hub sends no request before Start
	// returns, so handlers may read it without a lock.
	replier *replier
	stop    context.CancelFunc
	// tenants learns each workspace's path from the identity the hub
	// asserts on backend requests; the controller's fair queue groups
	// workspaces by it.
	tenants fairqueue.Tenants
}

func (h *hello) Manifest() sdk.Manifest {
	ui, _ := fs.Sub(files, "ui")
	crd, _ := files.ReadFile("greetings.yaml")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /whoami", func(w http.ResponseWriter, r *http.Request) {
		id, _ := sdk.IdentityFrom(r) // asserted by the hub, never by the caller
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(id)
	})
	mux.HandleFunc("GET /greetings", func(w http.ResponseWriter, r *http.Request) {
		id, ok := sdk.IdentityFrom(r)
		if !ok || id.Cluster == "" {
			http.Error(w, "no workspace", http.StatusForbidden)
			return
		}
		// The caller's workspace comes from the hub-asserted identity, so a
		// caller sees the greetings of the workspace they are in, only.
		list, err := h.replier.list(id.Cluster)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	})
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n")) // 0: until the client leaves
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 1; n == 0 || i <= n; i++ {
			fmt.Fprintf(w, "id: %d\ndata: hello %d\n\n", i, i)
			if http.NewResponseController(w).Flush() != nil { // the hub flushes too
				return // the client left
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	mux.HandleFunc("GET /echo", func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil) // same-origin only
		if err != nil {
			return // Upgrade has answered
		}
		defer c.Close()
		for typ, msg, err := c.ReadMessage(); err == nil; typ, msg, err = c.ReadMessage() {
			if c.WriteMessage(typ, msg) != nil { // text or binary, any size
				return
			}
		}
	})
	return sdk.Manifest{Name: "hello", DisplayName: "Hello", Version: "v0.1.0", Category: "examples",
		Description: "Says hello to whoever calls.", UI: ui, Backend: h.tenants.Middleware(mux), CRDs: [][]byte{crd}}
}

// config is hello's --provider-config (YAML).
type config struct {
	// MaxQueuedPerTenant bounds the Greetings of one tenant waiting in
	// the controller's queue; 0 means fairqueue.DefaultMaxPerTenant.
	MaxQueuedPerTenant int `json:"maxQueuedPerTenant,omitempty"`
}

// Start runs the controller for the provider's life, not the Start call's.
func (h *hello) Start(_ context.Context, hc sdk.HubConfig) error {
	if hc.RestConfig == nil {
		return errors.New("hello: the hub gave no credentials")
	}
	var cfg config
	if err := hc.DecodeConfig(&cfg); err != nil {
		return err
	}
	r, err := newReplier(hc.RestConfig, &h.tenants, cfg.MaxQueuedPerTenant)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.replier, h.stop = r, cancel
	go r.run(ctx)
	return nil
}

// Stop ends the controller.
func (h *hello) Stop(context.Context) error {
	if h.stop != nil {
		h.stop()
	}
	return nil
}

func main() { sdk.Serve(&hello{}) }
