// Command probeprovider is a provider plugin for the hub's end-to-end
// tests: it reports exactly what the hub sent it, so the tests can assert
// the identity contract and streaming behaviour from the provider's side of
// the socket rather than trusting the hub's own account.
//
//   - /headers and /public/headers answer every request header as received,
//     with a count of requests served so far (to prove a refused request
//     never arrived);
//   - /events?stream=<id>&n=<n> sends n server-sent events, each only after
//     the previous one was acknowledged with POST /ack?stream=<id>, so a
//     test can prove event i reached it before event i+1 existed;
//   - /pid reports the process id, so a test can kill exactly this plugin.
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/wharfhub/wharf/sdk"
)

type probe struct {
	served atomic.Int64
	mu     sync.Mutex
	acks   map[string]chan struct{}
}

func (p *probe) Manifest() sdk.Manifest {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /headers", p.headers)
	mux.HandleFunc("GET /public/headers", p.headers)
	mux.HandleFunc("GET /events", p.events)
	mux.HandleFunc("POST /ack", p.ack)
	mux.HandleFunc("GET /pid", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]int{"pid": os.Getpid()})
	})
	return sdk.Manifest{Name: "probe", DisplayName: "Probe", Version: "v0.0.1", Backend: mux,
		PublicPaths: []string{"/public/"}}
}

func (p *probe) headers(w http.ResponseWriter, r *http.Request) {
	n := p.served.Add(1)
	writeJSON(w, map[string]any{"served": n, "headers": r.Header})
}

// stream returns the ack channel of one stream id, creating it.
func (p *probe) stream(id string) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch, ok := p.acks[id]
	if !ok {
		ch = make(chan struct{}, 1)
		p.acks[id] = ch
	}
	return ch
}

func (p *probe) events(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("stream")
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if id == "" || err != nil || n < 1 {
		http.Error(w, "want stream=<id>&n=<count>", http.StatusBadRequest)
		return
	}
	acks := p.stream(id)
	defer func() {
		p.mu.Lock()
		delete(p.acks, id)
		p.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(w, "id: %d\ndata: event %d\n\n", i, i)
		if err := rc.Flush(); err != nil {
			return
		}
		if i == n {
			return
		}
		select {
		case <-acks:
		case <-r.Context().Done():
			return
		}
	}
}

func (p *probe) ack(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	ch, ok := p.acks[r.URL.Query().Get("stream")]
	p.mu.Unlock()
	if !ok {
		http.Error(w, "no such stream", http.StatusNotFound)
		return
	}
	select {
	case ch <- struct{}{}:
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "previous ack not consumed yet", http.StatusConflict)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func main() { sdk.Serve(&probe{acks: map[string]chan struct{}{}}) }
