// Command idleconns is the sixth outside review's idle connections (#4)
// for TestAttackLimitsReview6Conns: -n TLS connections, -par dialled at
// once and at most -rate a second, each sending the HTTP/2 preface and SETTINGS and then nothing,
// held until the hub closes them or -d ends. A connection closed is not
// dialled again. It runs in a process of its own, as the review's did, so
// that its descriptors and CPU are not the test's. It prints what it saw
// as one line of JSON.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
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
	Opened, DialErrors, ClosedByHub, HeldAtEnd int64
}

func main() {
	addr := flag.String("addr", "", "host:port of the hub")
	caFile := flag.String("ca", "", "the hub's serving certificate")
	n := flag.Int("n", 3000, "connections in all")
	par := flag.Int("par", 64, "dialled at once")
	perSecond := flag.Int("rate", 100, "dials a second at most")
	dur := flag.Duration("d", 20*time.Second, "")
	flag.Parse()
	// The row is about connections held idle, not about the handshake
	// rate (the review's W8, a new connection per request at ~217 a
	// second, was weak): the dials are paced.
	tick := time.NewTicker(time.Second / time.Duration(max(*perSecond, 1)))
	defer tick.Stop()
	pem, err := os.ReadFile(*caFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	end := time.Now().Add(*dur)
	var s struct{ opened, dialErrs, closed, held atomic.Int64 }
	var next atomic.Int64
	var wg, holders sync.WaitGroup
	for range *par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}}}
			for next.Add(1) <= int64(*n) && time.Now().Before(end) {
				<-tick.C
				c, err := d.Dial("tcp", *addr)
				if err != nil {
					s.dialErrs.Add(1)
					continue
				}
				s.opened.Add(1)
				holders.Add(1)
				go func() {
					defer holders.Done()
					if hold(c, end) {
						s.closed.Add(1)
					} else {
						s.held.Add(1)
					}
				}()
			}
		}()
	}
	wg.Wait()
	holders.Wait()
	_ = json.NewEncoder(os.Stdout).Encode(Stats{Opened: s.opened.Load(), DialErrors: s.dialErrs.Load(), ClosedByHub: s.closed.Load(), HeldAtEnd: s.held.Load()})
}

// hold sends the preface and SETTINGS, acknowledges the hub's SETTINGS
// and drops whatever else it sends, until the hub closes c (true) or end
// (false).
func hold(c net.Conn, end time.Time) (closedByHub bool) {
	defer c.Close()
	_ = c.SetDeadline(end)
	fr := http2.NewFramer(c, c)
	_, err := c.Write([]byte(http2.ClientPreface))
	if err == nil {
		err = fr.WriteSettings()
	}
	for err == nil {
		var f http2.Frame
		if f, err = fr.ReadFrame(); err == nil {
			if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
				err = fr.WriteSettingsAck()
			}
		}
	}
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}
