package hub

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// leaseRowTurns lets one lease row run at a time (leaseRowTurn).
var leaseRowTurns = make(chan struct{}, 1)

// leaseRowTurn waits until no other lease row runs, and holds the turn
// until t ends. A lease row asserts that its attack never costs the hub
// its replicas: single provider's lease (3.25 s to renew); two such
// attacks at once on 2 cores are two attackers, which no row measures,
// and their hubs missed renewals before either attack began (make test,
// r6:3: renewals of 1.5-3.3 s from the row's start). Other tests still
// run beside it.
func leaseRowTurn(t *testing.T) {
	t.Helper()
	leaseRowTurns <- struct{}{}
	t.Cleanup(func() { <-leaseRowTurns })
}

// startLeaseRowHub starts the review rows' hub (startReviewFairHub) with a
// replicas: single provider named single, whose lease the rows watch, and
// the other providers given as name=binary, waits until all of them are
// up, and returns the hub with a pool trusting its serving certificate.
func startLeaseRowHub(t *testing.T, providers ...string) (*attackEnv, *x509.CertPool) {
	t.Helper()
	args := []string{"--provider", "single=" + singleProvider(t)}
	names := []string{"single"}
	for _, p := range providers {
		args = append(args, "--provider", p)
		name, _, _ := strings.Cut(p, "=")
		names = append(names, name)
	}
	e := startReviewFairHub(t, args...)
	eventually(t, 90*time.Second, func() error {
		for _, p := range names {
			if up, err := providerMetric(t, e.h, "wharf_provider_up", p); err != nil || up != 1 {
				return fmt.Errorf("%s up %d: %v", p, up, err)
			}
		}
		return nil
	})
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(filepath.Join(e.h.opts.dataDir, "pki", "serving.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(pem)
	return e, pool
}
