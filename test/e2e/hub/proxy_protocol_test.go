package hub

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestProxyProtocol puts Debian's haproxy in front of the hub in TCP mode
// (TLS passes through), sending PROXY v2 headers from 127.0.0.9, and
// starts the hub with --proxy-protocol-cidrs 127.0.0.9/32 and at most two
// connections per client address. Behind a proxy that hid its clients,
// every client was the proxy (tenth review H18: a proxy on the hub's host
// made them all the hub's own address), so one client's connections
// spent every client's bound. Outcomes, never times:
//   - a client (127.0.3.1) holding two connections through the proxy has
//     its third closed, and another client (127.0.4.1) is served through
//     the same proxy meanwhile: the hub counts each client's address;
//   - a connection straight from the proxy's address without a header is
//     closed, and a client that sends a header of its own straight to the
//     hub is not believed (its TLS handshake fails); the hub counts the
//     refusal in wharf_proxy_protocol_refused_total.
func TestProxyProtocol(t *testing.T) {
	t.Parallel()
	h := startHub(t, hubOptions{extraArgs: []string{"--proxy-protocol-cidrs", "127.0.0.9/32", "--max-connections-per-address", "2"}})
	lb := startPROXYHAProxy(t, h.port)

	var served *http.Client
	eventually(t, 60*time.Second, func() error {
		served = connsClient(h, "127.0.4.1", true, false)
		return getThrough(served, lb)
	})

	var held []*http.Client
	for i := range 2 {
		cl := connsClient(h, "127.0.3.1", true, false)
		if err := getThrough(cl, lb); err != nil {
			t.Fatalf("127.0.3.1's connection %d through the proxy: %v", i+1, err)
		}
		held = append(held, cl) // its connection stays open, idle
	}
	if err := getThrough(connsClient(h, "127.0.3.1", true, false), lb); err == nil {
		t.Errorf("127.0.3.1's third connection through the proxy was served; want it closed past --max-connections-per-address 2")
	}
	if err := getThrough(connsClient(h, "127.0.4.1", false, false), lb); err != nil {
		t.Errorf("127.0.4.1 through the same proxy while 127.0.3.1 holds two connections: %v; want it served", err)
	}
	_ = held

	refused0 := proxyRefused(t, h)
	// Straight from the proxy's address, without a header.
	if err := getThrough(connsClient(h, "127.0.0.9", false, false), h.URL); err == nil {
		t.Errorf("a connection from 127.0.0.9 without a PROXY header was served; want it closed")
	}
	if n := proxyRefused(t, h); n <= refused0 {
		t.Errorf("wharf_proxy_protocol_refused_total %v after a connection without a header, was %v", n, refused0)
	}
	// A client's own header, straight to the hub, is not read.
	c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.3.2")}, Timeout: 10 * time.Second}).Dial("tcp", fmt.Sprintf("127.0.0.1:%d", h.port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "PROXY TCP4 127.0.4.1 127.0.0.1 40000 443\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	base := h.client().Transport.(*http.Transport).TLSClientConfig.Clone()
	base.ServerName = "127.0.0.1"
	if err := tls.Client(c, base).Handshake(); err == nil {
		t.Errorf("a client's own PROXY header straight to the hub was read as a header; want its bytes taken as TLS (a failed handshake)")
	}
}

// getThrough GETs /readyz at base with cl and wants 200.
func getThrough(cl *http.Client, base string) error {
	resp, err := cl.Get(base + "/readyz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %d", resp.StatusCode)
	}
	return nil
}

func proxyRefused(t *testing.T, h *hubProc) float64 {
	t.Helper()
	code, body, err := h.get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	m := regexp.MustCompile(`(?m)^wharf_proxy_protocol_refused_total (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// startPROXYHAProxy runs haproxy in TCP mode on a free port in front of
// the hub at hubPort, connecting from 127.0.0.9 and sending PROXY v2; it
// returns its URL.
func startPROXYHAProxy(t *testing.T, hubPort int) string {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatalf("haproxy is not installed (.ci/run installs it: apt-get install -y haproxy): %v", err)
	}
	port := freePort(t)
	cfg := fmt.Sprintf(`global
  maxconn 1024
defaults
  mode tcp
  timeout connect 5s
  timeout client 5m
  timeout server 5m
frontend hub
  bind 127.0.0.1:%d
  default_backend hub
backend hub
  server hub 127.0.0.1:%d send-proxy-v2 source 127.0.0.9
`, port, hubPort)
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-db", "-f", path)
	out, err := os.Create(filepath.Join(t.TempDir(), "haproxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(out.Name())
			t.Logf("haproxy log:\n%s", b)
		}
	})
	return fmt.Sprintf("https://127.0.0.1:%d", port)
}
