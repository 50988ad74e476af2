// Command singleprobe is the HA tests' replicas: single provider. Every
// request it serves on /whoami is appended, under this instance's id, to
// the serving log named in its provider config (one write(2) per line
// with O_APPEND, so instances on different hub replicas interleave whole
// lines), with CLOCK_MONOTONIC times, which every process on the machine
// shares. The test reads the log to prove that no two instances ever
// served at once, and the answers to measure failover.
//
// It also streams server-sent events (/events?n=<count>) and echoes
// websocket messages (/ws), for the soak's backend proxy load.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/sys/unix"

	"github.com/wharfhub/wharf/sdk"
)

type config struct {
	ServingLog string `json:"servingLog"`
}

type probe struct {
	instance string

	mu  sync.Mutex // guards log
	log *os.File
}

func monotonic() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func (p *probe) Manifest() sdk.Manifest {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /whoami", p.whoami)
	mux.HandleFunc("GET /events", events)
	up := websocket.Upgrader{}
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
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
	return sdk.Manifest{Name: "singleprobe", DisplayName: "Single-replica probe", Version: "v0.0.1",
		Backend: mux, Replicas: sdk.ReplicasSingle}
}

func (p *probe) Start(_ context.Context, hc sdk.HubConfig) error {
	var c config
	if err := hc.DecodeConfig(&c); err != nil {
		return err
	}
	if c.ServingLog == "" {
		return fmt.Errorf("servingLog is required")
	}
	f, err := os.OpenFile(c.ServingLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("serving log: %w", err)
	}
	p.log = f
	return nil
}

// whoami logs "<instance> <start> <end>" for the request it served.
func (p *probe) whoami(w http.ResponseWriter, _ *http.Request) {
	start := monotonic()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"instance": p.instance, "pid": os.Getpid(), "at": start})
	line := fmt.Sprintf("%s %d %d\n", p.instance, start, monotonic())
	p.mu.Lock()
	_, _ = p.log.WriteString(line)
	p.mu.Unlock()
}

// events sends n events 50 ms apart.
func events(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if err != nil || n < 1 || n > 1000 {
		http.Error(w, "want n=1..1000", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	for i := 1; i <= n; i++ {
		if _, err := fmt.Fprintf(w, "id: %d\ndata: event %d\n\n", i, i); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func main() {
	sdk.Serve(&probe{instance: fmt.Sprintf("%d-%d", os.Getpid(), monotonic())})
}
