package main

import (
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
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// newProbeCommand is `wharf-hub probe <path>`: a health check for scripts
// and exec probes on the hub's machine. The hub answers /livez, /readyz and
// /healthz to anonymous callers too (the chart's kubelet probes are plain
// HTTPS GETs); this verifies the serving certificate and uses the
// replica's own admin token from its data dir, so no credential is put in
// a pod spec or leaves the pod.
func newProbeCommand() *cobra.Command {
	var dataDir, caFile, serverName string
	var port int
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "probe </livez|/readyz|/healthz> --data-dir <dir>",
		Short: "Check this replica's health endpoint (for scripts and exec probes)",
		Long: `probe GETs a health endpoint of the hub on this machine (127.0.0.1:<port>)
with the admin token the hub keeps in --data-dir, verifying its serving
certificate against --ca-file (default <data-dir>/pki/serving.crt) for
--server-name. It exits 0 on 200 and 1 otherwise, printing the answer.`,
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch args[0] {
			case "/livez", "/readyz", "/healthz":
			default:
				return fmt.Errorf("probe path %q: must be /livez, /readyz or /healthz", args[0])
			}
			if dataDir == "" {
				return errors.New("--data-dir is required")
			}
			if caFile == "" {
				caFile = filepath.Join(dataDir, "pki", "serving.crt")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			body, err := probe(ctx, dataDir, caFile, serverName, port, args[0])
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), strings.TrimSpace(body))
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data-dir", "", "the hub's data dir (its admin-token is read from there)")
	f.IntVar(&port, "secure-port", 9443, "the hub's --secure-port")
	f.StringVar(&caFile, "ca-file", "", "PEM certificates to verify the hub's serving certificate with (its chain will do)")
	f.StringVar(&serverName, "server-name", "localhost", "name the serving certificate must be valid for")
	f.DurationVar(&timeout, "timeout", 5*time.Second, "bound on the probe")
	plain := &cobra.Command{}
	cmd.SetUsageFunc(plain.UsageFunc())
	cmd.SetHelpFunc(plain.HelpFunc())
	return cmd
}

func probe(ctx context.Context, dataDir, caFile, serverName string, port int, path string) (string, error) {
	tok, err := os.ReadFile(filepath.Join(dataDir, "admin-token"))
	if err != nil {
		return "", fmt.Errorf("reading the admin token: %w", err)
	}
	pemData, err := os.ReadFile(caFile)
	if err != nil {
		return "", fmt.Errorf("--ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		return "", fmt.Errorf("--ca-file %s holds no certificate", caFile)
	}
	tr := &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}}
	defer tr.CloseIdleConnections()
	u := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(b)))
	}
	return string(b), nil
}
