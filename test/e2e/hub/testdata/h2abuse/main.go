// Command h2abuse is the sixth outside review's HTTP/2 attacks below the
// hub's handlers, for TestAttackLimitsReview6H2: -conns connections each
// run -mode for -d, dialling again when the hub closes one:
//
//   - hpackamp (#1): one request enters a 4,000-byte field in the HPACK
//     dynamic table, then every request references it -refs times
//     (~1 MB decoded from ~300 bytes);
//   - bighdr (#2): requests whose header block is -hsize bytes of one
//     literal field, never indexed, in 16 KiB HEADERS and CONTINUATION
//     frames;
//   - stallhdr (#3): a header block of one -hsize literal field without
//     END_HEADERS, then nothing, the connection held open;
//   - ctrlflood (W2): SETTINGS, PING, WINDOW_UPDATE and PRIORITY frames
//     in turn, as fast as the connection takes them.
//
// It runs in a process of its own, as the review's did, so that it does
// not take the test's own CPU from the victim's client. It prints what it
// saw as one line of JSON.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// Stats is what the client saw.
type Stats struct {
	// Blocks are header blocks sent whole; Frames, control frames.
	Blocks, Frames    int64
	Dials, DialErrors int64
	// GoAways: connections the hub ended with a GOAWAY; ClosedByHub:
	// those it closed without one, before the attack's end.
	GoAways, ClosedByHub int64
}

type config struct {
	addr, path, token, mode string
	refs, hsize             int
	end                     time.Time
	// requestFirst: stallhdr makes one whole request before its stalled
	// block, so that the hub's first-request timeout (hub/idleconns)
	// does not apply and the HTTP/2 guard alone must close it.
	requestFirst bool
}

func main() {
	var c config
	flag.StringVar(&c.addr, "addr", "", "host:port of the hub")
	caFile := flag.String("ca", "", "the hub's serving certificate")
	flag.StringVar(&c.mode, "mode", "hpackamp", "hpackamp, bighdr, stallhdr or ctrlflood")
	flag.StringVar(&c.path, "path", "/version", "")
	flag.StringVar(&c.token, "token", "", "bearer token (none if empty)")
	flag.IntVar(&c.refs, "refs", 240, "hpackamp: references to the indexed field per request")
	flag.IntVar(&c.hsize, "hsize", 900_000, "bighdr, stallhdr: bytes of the header block")
	flag.BoolVar(&c.requestFirst, "request-first", false, "stallhdr: one whole request before the stalled block")
	conns := flag.Int("conns", 8, "")
	dur := flag.Duration("d", 10*time.Second, "")
	flag.Parse()
	switch c.mode {
	case "hpackamp", "bighdr", "stallhdr", "ctrlflood":
	default:
		fmt.Fprintf(os.Stderr, "unknown -mode %q\n", c.mode)
		os.Exit(2)
	}
	pem, err := os.ReadFile(*caFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c.end = time.Now().Add(*dur)
	var s stats
	var wg sync.WaitGroup
	for range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: &tls.Config{RootCAs: pool, NextProtos: []string{http2.NextProtoTLS}}}
			for time.Now().Before(c.end) {
				tc, err := d.Dial("tcp", c.addr)
				s.dials.Add(1)
				if err != nil {
					s.dialErrs.Add(1)
					time.Sleep(100 * time.Millisecond)
					continue
				}
				attack(tc.(*tls.Conn), &c, &s)
			}
		}()
	}
	wg.Wait()
	_ = json.NewEncoder(os.Stdout).Encode(Stats{Blocks: s.blocks.Load(), Frames: s.frames.Load(), Dials: s.dials.Load(),
		DialErrors: s.dialErrs.Load(), GoAways: s.goaways.Load(), ClosedByHub: s.closed.Load()})
}

type stats struct {
	blocks, frames, dials, dialErrs, goaways, closed atomic.Int64
}
