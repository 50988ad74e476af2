package hub

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
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
	leaseRowTurn(t)
	e, pool := startLeaseRowHub(t)
	h := e.h
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

			wait := startRapidReset(t, h, row.path, row.token, row.conns, r5Attack)
			// alice starts once the attack runs (a pause, not an
			// assertion) and does her fixed count, however long it takes.
			time.Sleep(time.Second)
			failed := r5ResetVictim(h, pool, e.tokens["alice"], "/clusters/"+e.vars["aliceHome"], row.id, r5VictimOps)
			att := wait()
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
			if att.ClosedByHub == 0 {
				t.Errorf("no attacker connection was closed by the hub: %s", att)
			}
		})
	}
}

const (
	// r5VictimOps is alice's fixed count of operations per row.
	r5VictimOps = 120
	// r5Attack is how long each row's attack runs: past the leases'
	// renewal deadline (3.25 s) several times over, so that a starved hub
	// misses renewals. A load, not an assertion.
	r5Attack = 12 * time.Second
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

// r5ResetVictim runs n of alice's create, get, list (limit 50) and delete of
// small ConfigMaps in her home ws, one after another on one kept-alive
// HTTP/2 connection (as client-go would), and returns her failures.
func r5ResetVictim(h *hubProc, pool *x509.CertPool, token, ws, tag string, n int) []string {
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

// rrStats is what testdata/rapidreset saw.
type rrStats struct {
	Streams, Dials, DialErrors, GoAways, ClosedByHub int64
}

func (s rrStats) String() string {
	return fmt.Sprintf("%d streams reset, %d dials (%d failed), %d GOAWAYs, %d connections closed by the hub",
		s.Streams, s.Dials, s.DialErrors, s.GoAways, s.ClosedByHub)
}

// startRapidReset runs testdata/rapidreset (a process of its own, as the
// review's client was) against h for d; wait returns what it saw.
func startRapidReset(t *testing.T, h *hubProc, path, token string, conns int, d time.Duration) (wait func() rrStats) {
	t.Helper()
	bin := builtBinary(t, "./test/e2e/hub/testdata/rapidreset", "wharf-e2e-rapidreset")
	cmd := exec.Command(bin, "-addr", strings.TrimPrefix(h.URL, "https://"), "-ca", filepath.Join(h.opts.dataDir, "pki", "serving.crt"),
		"-path", path, "-token", token, "-conns", strconv.Itoa(conns), "-d", d.String())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() rrStats {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("rapidreset: %v\n%s", err, errb.String())
		}
		var s rrStats
		if err := json.Unmarshal(out.Bytes(), &s); err != nil {
			t.Fatalf("rapidreset printed %q: %v", out.String(), err)
		}
		return s
	}
}
