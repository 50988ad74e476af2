package rapidreset

import (
	"fmt"

	"github.com/spf13/pflag"
)

// Default bounds: above what a client that is not attacking cancels
// before its answer (a kubectl interrupted, a page left: a few streams),
// far below the thousands a second of a rapid reset. Measured on 2
// cores under the fifth review's attack (8 connections): with 100 at
// once a connection lived long enough to take some 130 resets and the
// lease renewals still slowed to 1.5-3.5 s; with 20 they did not.
const (
	DefaultBurst     = 20
	DefaultPerSecond = 2
	// DefaultUnanswered is 0, no bound: a connection is not a tenant.
	// client-go shares one HTTP/2 connection among every client of a
	// process with the same TLS settings, whatever their tokens, and a
	// proxy multiplexes its users on one; with a bound (16 at first),
	// one tenant's 24 concurrent slow lists held another's requests on
	// the shared connection until they timed out (the noisy bench's
	// B2/B3: 22% of the victim's requests failed; B6: 67%).
	DefaultUnanswered = 0
)

// Options are each connection's budget of streams cancelled before
// their answer.
type Options struct {
	// Burst is how many a connection may cancel at once; 0: no bound.
	Burst int
	// PerSecond refills the budget.
	PerSecond float64
	// Unanswered bounds the streams of one connection in the handler
	// chain before their answer begins; more wait before the chain,
	// where a reset ends the wait at once. 0: no bound.
	Unanswered int
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{Burst: DefaultBurst, PerSecond: DefaultPerSecond, Unanswered: DefaultUnanswered}
}

// AddFlags registers the flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.Burst, "max-stream-resets-per-connection", o.Burst,
		"HTTP/2 streams one client connection may cancel (RST_STREAM) before the hub begins their answer, at once; past it, and past "+
			"--stream-resets-per-second-per-connection after that, the hub closes the connection (rapid reset, CVE-2023-44487). "+
			"Counted before authentication. The hub's in-process client is exempt. 0 means no bound.")
	fs.Float64Var(&o.PerSecond, "stream-resets-per-second-per-connection", o.PerSecond,
		"Rate at which a connection's budget of --max-stream-resets-per-connection refills.")
	fs.IntVar(&o.Unanswered, "max-unanswered-streams-per-connection", o.Unanswered,
		"HTTP/2 requests of one client connection the hub works on at once before their answer begins (a watch's or stream's answer begins when it is established); "+
			"more wait, before authentication, where a cancel ends the wait at once. Only with --max-stream-resets-per-connection. The hub's in-process client is exempt. 0 means no bound.")
}

// Validate reports every invalid option.
func (o *Options) Validate() []error {
	if o.Burst < 0 || o.PerSecond < 0 || o.Unanswered < 0 {
		return []error{fmt.Errorf("--max-stream-resets-per-connection, --stream-resets-per-second-per-connection and --max-unanswered-streams-per-connection must not be negative")}
	}
	return nil
}
