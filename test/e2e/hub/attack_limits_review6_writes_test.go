package hub

import (
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue 24, sixth outside review, W4: 4 concurrent deletecollections of
// 3,600 ConfigMaps each, in her own home: another tenant fell from 275 to
// 27 operations a second for 30 s. Every delete is an etcd write, its
// watch events and its usage record, and nothing bounded how fast one
// tenant wrote. Now each tenant's writes past --tenant-write-burst (1,000)
// wait for --tenant-writes-per-second (200; hub/quota WriteRate).
//
// The row, at the defaults: the hub's admin (never paced) stores 4 x 800
// ConfigMaps in four namespaces of mallory's home; mallory deletes each
// namespace's with one deletecollection, all four at once, sending it
// again on 429 until the namespace is empty, while alice does a fixed
// count of ConfigMap operations and a replicas: single provider holds its
// lease; alice starts once mallory's burst is spent. Outcomes, never
// times: every one of alice's operations succeeds,
// the lease is never lost, the hub stays ready, mallory's 3,200 deletes
// waited for her rate (wharf_tenant_write_wait_seconds_total rose), every
// answer she got was 200 or 429 with Retry-After, and in the end all her
// ConfigMaps are gone. On 74967a9 (no write rate) the series is missing.
func TestAttackLimitsReview6Writes(t *testing.T) {
	t.Parallel()
	leaseRowTurn(t)
	e, pool := startLeaseRowHub(t)
	w4Row(t, e, pool, r5VictimOps)
}

// w4Row runs the row on e's hub; it returns how long alice's operations
// took (logged for the README's measures, never asserted).
func w4Row(t *testing.T, e *attackEnv, pool *x509.CertPool, victimOps int) time.Duration {
	h := e.h
	home := "/clusters/" + e.vars["malloryHome"]
	const namespaces, each = 4, 800
	for i := range namespaces {
		ns := fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"w4-%d"}}`, i)
		if code, body := h.doAs(e.tokens["hubadmin"], http.MethodPost, home+"/api/v1/namespaces", ns); code != http.StatusCreated {
			t.Fatalf("namespace w4-%d: %d %s", i, code, body)
		}
	}
	cl := r5Client(h, 60*time.Second)
	stored := flood(8, namespaces*each/8, func(int) *http.Client { return cl }, func(cl *http.Client, w, i int, got *codes) {
		k := w*(namespaces*each/8) + i
		u := fmt.Sprintf("%s%s/api/v1/namespaces/w4-%d/configmaps", h.URL, home, k%namespaces)
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(cmJSON(fmt.Sprintf("w4-%d", k))))
		req.Header.Set("Authorization", "Bearer "+e.tokens["hubadmin"])
		req.Header.Set("Content-Type", "application/json")
		resp, err := cl.Do(req)
		if err != nil {
			got.add("ERR")
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got.add(fmt.Sprint(resp.StatusCode))
	})
	if stored.get("201") != namespaces*each {
		t.Fatalf("storing %d ConfigMaps as the hub's admin: %s", namespaces*each, stored)
	}

	lost0 := mustProviderMetric(t, h, "wharf_provider_lease_losses_total", "single")
	waited0 := writeWaitSeconds(t, e)
	got := &codes{}
	var wg sync.WaitGroup
	for i := range namespaces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := fmt.Sprintf("%s%s/api/v1/namespaces/w4-%d/configmaps", h.URL, home, i)
			for round := 0; round < 20; round++ {
				req, _ := http.NewRequest(http.MethodDelete, u, nil)
				req.Header.Set("Authorization", "Bearer "+e.tokens["mallory"])
				resp, err := cl.Do(req)
				if err != nil {
					got.add("ERR")
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				got.add(r5Answer(resp))
				if resp.StatusCode == http.StatusOK {
					return
				}
				if s, _ := strconv.Atoi(resp.Header.Get("Retry-After")); s > 0 {
					time.Sleep(time.Duration(s) * time.Second)
				}
			}
		}()
	}
	// alice starts once mallory's burst is spent and her deletes wait
	// (or, on a hub that never makes them wait, once they are done) and
	// does her fixed count, however long it takes.
	deleted := make(chan struct{})
	go func() { wg.Wait(); close(deleted) }()
	eventually(t, 5*time.Minute, func() error {
		select {
		case <-deleted:
			return nil
		default:
		}
		if writeWaitSeconds(t, e) > waited0 {
			return nil
		}
		return fmt.Errorf("mallory's deletes do not wait yet")
	})
	start := time.Now()
	failed := r5ResetVictim(h, pool, e.tokens["alice"], "/clusters/"+e.vars["aliceHome"], "w4", victimOps)
	took := time.Since(start)
	<-deleted
	waited := writeWaitSeconds(t, e) - waited0
	t.Logf("W4: mallory's deletecollections: %s; her deletes waited %.1f s for her write rate; alice: %d of %d operations failed, in %v", got, waited, len(failed), victimOps, took)

	hubHealthy(t, h)
	if len(failed) > 0 {
		t.Errorf("alice: %d of %d operations failed under the deletes: %s", len(failed), victimOps, strings.Join(failed[:min(len(failed), 5)], "; "))
	}
	if lost := mustProviderMetric(t, h, "wharf_provider_lease_losses_total", "single") - lost0; lost != 0 {
		t.Errorf("the replicas: single provider lost its lease %d times under the deletes", lost)
	}
	if waited <= 0 {
		t.Errorf("mallory's %d deletes never waited for her write rate (wharf_tenant_write_wait_seconds_total +%v)", namespaces*each, waited)
	}
	for k, n := range got.snapshot() {
		if k != "200" && k != "429" {
			t.Errorf("mallory's deletecollections: %d answers %q", n, k)
		}
	}
	for i := range namespaces {
		code, body := h.doAs(e.tokens["mallory"], http.MethodGet, fmt.Sprintf("%s/api/v1/namespaces/w4-%d/configmaps", home, i), "")
		if code != http.StatusOK || !strings.Contains(body, `"items":[]`) && !strings.Contains(body, `"items": []`) {
			t.Errorf("namespace w4-%d after the deletecollections: %d %.300s", i, code, body)
		}
	}
	return took
}

// writeWaitSeconds reads wharf_tenant_write_wait_seconds_total; a hub
// without the series (74967a9) fails the row.
func writeWaitSeconds(t *testing.T, e *attackEnv) float64 {
	t.Helper()
	code, body := e.as("hubadmin", http.MethodGet, "/metrics", "", nil)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %.300s", code, body)
	}
	m := regexp.MustCompile(`(?m)^wharf_tenant_write_wait_seconds_total (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no wharf_tenant_write_wait_seconds_total series: the hub does not pace tenants' writes")
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
