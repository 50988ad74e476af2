// Command wharf-agent connects a cluster or server behind NAT to a Wharf
// hub as an edge. It dials out only and listens on nothing: the hub reaches
// it back through the tunnel it holds open (see providers/edges/agent).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRoot().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "wharf-agent:", err)
		os.Exit(1)
	}
}
