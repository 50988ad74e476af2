// Command wharf is the Wharf command line: it logs in to a hub and serves
// as kubectl's credential plugin for the contexts it writes.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/wharfhub/wharf/cmd/wharf/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.NewRoot().ExecuteContext(ctx)
	stop()
	if err != nil {
		// API errors read like kubectl's; `wharf ssh` passes ssh's status on.
		if msg := cli.Message(err); msg != "" {
			fmt.Fprintln(os.Stderr, msg)
		}
		os.Exit(cli.ExitCode(err))
	}
}
