package hub

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// contractHub is one hub running the sample provider (hello) and the probe
// provider, with alice allowed in root:prov and bob in no workspace.
type contractHub struct {
	*hubProc
	helloBin string
	// http trusts the hub's CA, speaks HTTP/1.1 (so header names go on the
	// wire exactly as a test spells them) and has no overall timeout:
	// streaming tests bound their reads with contexts instead.
	http *http.Client
	// cluster is root:prov's logical cluster id.
	cluster string
}

const (
	aliceToken = "alice-token"
	bobToken   = "bob-token"
)

func startContractHub(t *testing.T) *contractHub {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(aliceToken+",alice,alice-uid,\"devs\"\n"+bobToken+",bob,bob-uid,\"devs\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hello := providerBinary(t, "./sdk/examples/hello", "hello")
	probe := providerBinary(t, "./test/e2e/hub/internal/probeprovider", "probe")
	h := startHub(t, hubOptions{extraArgs: []string{"--token-auth-file", tokens,
		"--provider", "hello=" + hello, "--provider", "probe=" + probe}})
	c := &contractHub{hubProc: h, helloBin: hello, http: streamClient(h)}
	t.Cleanup(c.http.CloseIdleConnections)
	c.cluster = h.createWorkspace("root", "prov")
	h.mustKubectl("root:prov", "create", "clusterrolebinding", "alice-view", "--clusterrole=view", "--user=alice")
	// Plugins start after the hub is ready, and alice's binding needs the
	// authorizer's informer: wait until both answer.
	eventually(t, 60*time.Second, func() error {
		for _, p := range []string{"/services/providers/hello/whoami", "/services/providers/probe/pid"} {
			if code, body := c.call(t, aliceToken, p, http.Header{"X-Wharf-Workspace": {"root:prov"}}); code != http.StatusOK {
				return fmt.Errorf("%s: %d %s", p, code, body)
			}
		}
		return nil
	})
	return c
}

func streamClient(h *hubProc) *http.Client {
	pool := x509.NewCertPool()
	if pem, err := os.ReadFile(filepath.Join(h.opts.dataDir, "pki", "serving.crt")); err == nil {
		pool.AppendCertsFromPEM(pem)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// call sends a GET with hdr copied verbatim (non-canonical names kept) and
// returns status and body.
func (c *contractHub) call(t *testing.T, token, path string, hdr http.Header) (int, string) {
	t.Helper()
	code, _, body := c.do(t, token, http.MethodGet, path, hdr)
	return code, body
}

// do sends one bounded request; a transport error is status 0 with the
// error as body.
func (c *contractHub) do(t *testing.T, token, method, path string, hdr http.Header) (int, http.Header, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	return resp.StatusCode, resp.Header, readAll(resp)
}

// TestProviderContract runs the identity, streaming and crash tests against
// one hub with real plugin processes. The crash test runs last: it kills
// the sample provider.
func TestProviderContract(t *testing.T) {
	t.Parallel()
	c := startContractHub(t)
	t.Run("ForgedHeaders", func(t *testing.T) { testForgedHeaders(t, c) })
	t.Run("SSE", func(t *testing.T) { testSSE(t, c) })
	t.Run("Websocket", func(t *testing.T) { testWebsocket(t, c) })
	t.Run("Crash", func(t *testing.T) { testCrash(t, c) })
}
