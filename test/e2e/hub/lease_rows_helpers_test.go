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
