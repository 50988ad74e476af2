package sdk

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/wharfhub/wharf/sdk/plugin"
)

// stopGrace bounds the Stop hook when the plugin shuts itself down (hub gone
// or connection closed) rather than being stopped by the hub.
const stopGrace = 10 * time.Second

// parentPoll is how often the plugin checks it still has the hub as parent.
const parentPoll = 2 * time.Second

// Serve runs p as a Wharf provider plugin. Call it from main; it returns when
// the hub disconnects. Run by hand (without the hub's handshake cookie) it
// prints a short explanation and exits.
func Serve(p Provider) {
	srv := NewServer(p)
	stopWatch := watchParent(srv)
	plugin.Serve(srv)
	stopWatch()
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	// The hub normally calls Stop first; this covers a bare disconnect so the
	// provider's Stop hook still runs. Stop is idempotent.
	if err := srv.Stop(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "provider stop: %v\n", err)
	}
}

// watchParent exits the plugin when it is re-parented, i.e. the hub died
// without killing it (Pdeathsig covers Linux; this covers the rest and the
// case of a hub thread exiting). Returns a func that ends the watch.
func watchParent(srv plugin.Server) (stop func()) {
	ppid := os.Getppid()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(parentPoll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if os.Getppid() == ppid {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
				_ = srv.Stop(ctx)
				cancel()
				fmt.Fprintln(os.Stderr, "provider: hub went away, exiting")
				os.Exit(1)
			}
		}
	}()
	return func() { close(done); <-finished }
}
