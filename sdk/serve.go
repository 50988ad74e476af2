package sdk

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
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
//
// If the hub dies without stopping it (SIGTERM, which the hub arranges as the
// parent-death signal on Linux, or re-parenting noticed by polling), the
// plugin runs its Stop hook and then kills its whole process group, so
// nothing it spawned outlives the hub.
func Serve(p Provider) {
	srv := NewServer(p)
	stopWatch := watchHub(srv)
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

// watchHub ends the plugin when the hub goes away. It returns a func that
// ends the watch and waits for its goroutine.
func watchHub(srv plugin.Server) (stop func()) {
	ppid := os.Getppid()
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
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
			case <-term:
				abandon(srv, "terminated")
			case <-t.C:
				if os.Getppid() != ppid {
					abandon(srv, "hub went away")
				}
			}
		}
	}()
	return func() {
		signal.Stop(term)
		close(done)
		<-finished
	}
}

// abandon stops the provider and exits, taking its process group along.
func abandon(srv plugin.Server, why string) {
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	_ = srv.Stop(ctx)
	cancel()
	fmt.Fprintf(os.Stderr, "provider: %s, exiting\n", why)
	exitGroup()
}
