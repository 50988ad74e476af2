package idleconns

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// Defaults. A client that is not attacking sends its first request at
// once after its handshake (client-go, kubectl, browsers, agents, the
// providers' plugins); 10 s leaves room for a handshake from the hub's
// own address that waited up to 5 s for its token (hub/fairness own.go).
// 1,024 connections not yet begun is far above what clients dialling at
// once leave open (a browser's six, a client's one), and bounds an
// attacker's hold to a few tens of megabytes.
const (
	DefaultTimeout = 10 * time.Second
	DefaultMax     = 1024
)

// Options bound the connections that have not begun a request.
type Options struct {
	// Timeout closes a connection that has not begun a request this long
	// after it was accepted; 0: never.
	Timeout time.Duration
	// Max bounds such connections hub-wide; past it the oldest is
	// closed. 0: no bound.
	Max int
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{Timeout: DefaultTimeout, Max: DefaultMax}
}

// AddFlags registers the flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.Timeout, "first-request-timeout", o.Timeout,
		"How long after it is accepted (its TLS handshake included) a client connection may go without beginning a request, HTTP/1.1 or HTTP/2; "+
			"past it the hub closes the connection. A connection that has made a request is not affected. The hub's in-process client is exempt. 0 means no timeout.")
	fs.IntVar(&o.Max, "max-connections-without-request", o.Max,
		"Most client connections that have not yet begun a request the hub holds at once; past it the oldest of them is closed. "+
			"The hub's in-process client is exempt. 0 means no bound.")
}

// Validate reports every invalid option.
func (o *Options) Validate() []error {
	if o.Timeout < 0 || o.Max < 0 {
		return []error{fmt.Errorf("--first-request-timeout and --max-connections-without-request must not be negative")}
	}
	return nil
}
