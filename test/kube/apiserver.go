package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// replica is one kube-apiserver process. Its address and port stay fixed
// across StopReplica/StartReplica so clients and Endpoints stay valid.
type replica struct {
	index   int
	ip      net.IP
	port    int
	certDir string
	logPath string
	proc    *process // nil while stopped
}

// host returns "ip:port".
func (r *replica) host() string {
	return net.JoinHostPort(r.ip.String(), strconv.Itoa(r.port))
}

// apiserverArgs is the command line of one replica. Every flag here is one
// the server needs to start without controllers on loopback; see the
// package doc for --endpoint-reconciler-type.
func (c *Cluster) apiserverArgs(r *replica) []string {
	args := []string{
		"--etcd-servers=" + c.etcd.clientURL,
		"--service-account-key-file=" + c.pki.saPub,
		"--service-account-signing-key-file=" + c.pki.saKey,
		"--service-account-issuer=" + ServiceAccountIssuer,
		"--token-auth-file=" + c.tokenFile,
		"--authorization-mode=RBAC",
		"--secure-port=" + strconv.Itoa(r.port),
		"--bind-address=" + r.ip.String(),
		"--advertise-address=" + r.ip.String(),
		"--cert-dir=" + r.certDir,
		"--tls-cert-file=" + c.pki.servingCrt,
		"--tls-private-key-file=" + c.pki.servingKey,
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--profiling=false",
	}
	return append(args, c.opts.APIServerArgs...)
}

// startReplica launches r and waits for /readyz.
func (c *Cluster) startReplica(ctx context.Context, r *replica) error {
	if err := os.MkdirAll(r.certDir, 0o700); err != nil {
		return fmt.Errorf("cert dir: %w", err)
	}
	name := fmt.Sprintf("kube-apiserver-%d", r.index)
	p, err := startProcess(name, c.bins.APIServer, c.apiserverArgs(r), r.logPath)
	if err != nil {
		return err
	}
	r.proc = p
	ready := func(ctx context.Context) error { return c.checkReady(ctx, r) }
	if err := waitFor(ctx, p, ready); err != nil {
		_ = p.kill()
		r.proc = nil
		return fmt.Errorf("%s at %s not ready (log %s): %w", name, r.host(), r.logPath, err)
	}
	return nil
}

// checkReady asks the replica's /readyz as the admin.
func (c *Cluster) checkReady(ctx context.Context, r *replica) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+r.host()+"/readyz", nil)
	if err != nil {
		return fmt.Errorf("readyz request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.adminToken)
	resp, err := c.probe.Do(req)
	if err != nil {
		return fmt.Errorf("GET /readyz: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /readyz: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// probeClient is a plain HTTPS client trusting only the fixture's CA, for
// readiness checks that must not depend on client-go.
func probeClient(caPEM []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("fixture CA PEM holds no certificate")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	return &http.Client{Transport: tr}, nil
}

// replicaDirs returns the per-replica cert dir and log path.
func replicaDirs(dir, logDir string, i int) (certDir, logPath string) {
	return filepath.Join(dir, fmt.Sprintf("apiserver-%d", i), "certs"),
		filepath.Join(logDir, fmt.Sprintf("kube-apiserver-%d.log", i))
}
