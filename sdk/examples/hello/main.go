// Command hello is the sample provider and living documentation of the SDK:
// a UI custom element, /whoami, server-sent events, a websocket echo, a CRD.
package main

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/websocket"

	"github.com/wharfhub/wharf/sdk"
)

//go:embed ui greetings.yaml
var files embed.FS

type hello struct{}

func (hello) Manifest() sdk.Manifest {
	ui, _ := fs.Sub(files, "ui")
	crd, _ := files.ReadFile("greetings.yaml")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /whoami", func(w http.ResponseWriter, r *http.Request) {
		id, _ := sdk.IdentityFrom(r) // asserted by the hub, never by the caller
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(id)
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
		Description: "Says hello to whoever calls.", UI: ui, Backend: mux, CRDs: [][]byte{crd}}
}

func main() { sdk.Serve(hello{}) }
