// Command singleprovider is the end-to-end tests' replicas: single
// provider. It echoes every request header it receives (so tests assert
// the exact X-Kedge-* set), streams server-sent events one by one, and
// echoes websocket messages.
package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"testing/fstest"

	"github.com/gorilla/websocket"

	"github.com/wharfhub/wharf/sdk"
)

type provider struct{ release chan struct{} }

func (p *provider) Manifest() sdk.Manifest {
	mux := http.NewServeMux()
	headers := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"pid": os.Getpid(), "path": r.URL.Path, "headers": r.Header})
	}
	mux.HandleFunc("GET /headers", headers)
	mux.HandleFunc("GET /public/headers", headers)
	// /events sends one event, then waits for /release before the second,
	// so a test can see the first arrive while the handler still runs.
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first "+r.Header.Get(sdk.HeaderUser)+"\n\n")
		_ = http.NewResponseController(w).Flush()
		select {
		case <-p.release:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "data: second\n\n")
	})
	mux.HandleFunc("GET /release", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case p.release <- struct{}{}:
			_, _ = io.WriteString(w, "released")
		default:
			http.Error(w, "no stream waiting", http.StatusConflict)
		}
	})
	up := websocket.Upgrader{}
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.WriteMessage(websocket.TextMessage, []byte("hello "+r.Header.Get(sdk.HeaderUser)))
		for {
			mt, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(mt, msg); err != nil {
				return
			}
		}
	})
	return sdk.Manifest{
		Name:        "single",
		Version:     "v0.0.1",
		Description: "Test provider that must run on one hub replica only.",
		UI:          fstest.MapFS{"app.js": {Data: []byte("customElements.define('x-single', class extends HTMLElement {});\n")}},
		Backend:     mux,
		Replicas:    sdk.ReplicasSingle,
		PublicPaths: []string{"/public/"},
	}
}

func main() { sdk.Serve(&provider{release: make(chan struct{})}) }
