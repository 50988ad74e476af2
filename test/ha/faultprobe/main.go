// Command faultprobe is a provider plugin that misbehaves on purpose, for
// the plugin-fault tests in test/ha: its provider config picks how.
//
//	mode: hang        Start never returns (the hub's start timeout must fire)
//	mode: crash-loop  the process exits during Start, every time
//	mode: slow-start  Start takes delay (e.g. "10s"), then it serves
//	mode: ""          it serves at once
//
// Its provider name is its binary's name without "wharf-provider-", so one
// build copied under several names gives several providers. It serves
// GET /ping, answering "pong <name>".
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wharfhub/wharf/sdk"
)

type config struct {
	Mode  string `json:"mode"`
	Delay string `json:"delay"`
}

type probe struct{ name string }

func (p *probe) Manifest() sdk.Manifest {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ping", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "pong %s\n", p.name)
	})
	return sdk.Manifest{Name: p.name, Version: "0.0.1", Replicas: sdk.ReplicasAny, Backend: mux,
		Description: "misbehaves on purpose (test/ha)"}
}

func (p *probe) Start(ctx context.Context, hc sdk.HubConfig) error {
	var c config
	if err := hc.DecodeConfig(&c); err != nil {
		return err
	}
	switch c.Mode {
	case "":
		return nil
	case "hang":
		// Not even ctx ends it: a hung plugin does not cooperate.
		select {}
	case "crash-loop":
		fmt.Fprintln(os.Stderr, "faultprobe: crashing in Start on purpose")
		os.Exit(3)
	case "slow-start":
		d, err := time.ParseDuration(c.Delay)
		if err != nil {
			return fmt.Errorf("faultprobe: delay: %w", err)
		}
		time.Sleep(d)
		return nil
	}
	return fmt.Errorf("faultprobe: unknown mode %q", c.Mode)
}

func main() {
	sdk.Serve(&probe{name: strings.TrimPrefix(filepath.Base(os.Args[0]), "wharf-provider-")})
}
