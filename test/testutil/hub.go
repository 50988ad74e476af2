package testutil

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// HubOptions configure one wharf-hub process for StartHub.
type HubOptions struct {
	// Port is the secure port; 0 picks a free one. Set it when the URL must
	// be known before the hub starts (an IdP's redirect URI).
	Port int
	// Args are added after --data-dir, --secure-port and --bind-address:
	// --token-auth-file, --provider, --oidc-*, ...
	Args []string
}

// Hub is a running wharf-hub on an embedded etcd in a fresh data dir.
type Hub struct {
	URL             string // https://127.0.0.1:<port>
	CAFile          string // the serving CA (data-dir/pki/serving.crt)
	AdminKubeconfig string // system:masters
	AdminToken      string
	DataDir         string
	Log             *Buffer
}

// FreePort is a port free on every address a moment ago, outside the
// kernel's ephemeral range (ports.go). Another process may take it before
// the caller binds it; StartHub retries that race.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// StartHub starts the wharf-hub that `make build` made and waits until
// /readyz answers 200 to the admin. The hub is stopped (SIGINT, then
// SIGKILL after 30 s) when the test ends, and its log tail is printed if
// the test failed. This is the one hub-process harness for test packages
// outside test/e2e/hub, so none grows its own copy.
func StartHub(t testing.TB, opts HubOptions) *Hub {
	t.Helper()
	for attempt := 1; ; attempt++ {
		h, err := startHubOnce(t, opts)
		if err == nil {
			return h
		}
		if attempt < 3 && opts.Port == 0 && strings.Contains(h.Log.String(), "address already in use") {
			t.Logf("wharf-hub lost a port race, retrying: %v", err)
			continue
		}
		t.Fatalf("wharf-hub not ready: %v\n%s", err, Tail(h.Log.String(), 150))
	}
}

func startHubOnce(t testing.TB, opts HubOptions) (*Hub, error) {
	port := opts.Port
	if port == 0 {
		port = FreePort(t)
	}
	h := &Hub{DataDir: t.TempDir(), Log: &Buffer{}, URL: fmt.Sprintf("https://127.0.0.1:%d", port)}
	h.CAFile = filepath.Join(h.DataDir, "pki", "serving.crt")
	h.AdminKubeconfig = filepath.Join(h.DataDir, "admin.kubeconfig")
	args := append([]string{"--data-dir", h.DataDir, "--secure-port", fmt.Sprint(port), "--bind-address", "127.0.0.1"}, opts.Args...)
	cmd := exec.Command(Binary(t, "wharf-hub"), args...)
	cmd.Stdout, cmd.Stderr = h.Log, h.Log
	if err := cmd.Start(); err != nil {
		return h, fmt.Errorf("starting wharf-hub: %w", err)
	}
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	var last error
	for {
		select {
		case <-exited:
			return h, fmt.Errorf("wharf-hub exited early: %v", exitErr)
		default:
		}
		if last = h.ready(); last == nil {
			break
		}
		if time.Now().After(deadline) {
			stop()
			return h, fmt.Errorf("not ready after 2m: %w", last)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("wharf-hub log (%s, tail):\n%s", h.URL, Tail(h.Log.String(), 150))
		}
	})
	return h, nil
}

// ready is nil once the admin token exists and /readyz answers 200 to it.
func (h *Hub) ready() error {
	tok, err := os.ReadFile(filepath.Join(h.DataDir, "admin-token"))
	if err != nil {
		return err
	}
	h.AdminToken = strings.TrimSpace(string(tok))
	hc, err := h.Client()
	if err != nil {
		return err
	}
	req, _ := http.NewRequest(http.MethodGet, h.URL+"/readyz", nil)
	req.Header.Set("Authorization", "Bearer "+h.AdminToken)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz: %d", resp.StatusCode)
	}
	return nil
}

// Client is an HTTP client that trusts only the hub's serving CA.
func (h *Hub) Client() (*http.Client, error) {
	pem, err := os.ReadFile(h.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", h.CAFile)
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}, nil
}
