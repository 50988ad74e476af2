package hub

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// pluginChildren lists the live processes running bin whose parent is pid:
// the plugins one hub process runs, told apart from other hubs' by ppid.
func pluginChildren(t *testing.T, pid int, bin string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err != nil || exe != bin {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the parenthesised command: state, ppid, ...
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[0] != "Z" && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// echoed is what the single provider answers on /headers.
type echoed struct {
	Pid     int
	Path    string
	Headers http.Header
}

func kedgeOnly(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if strings.HasPrefix(strings.ToLower(k), "x-kedge-") {
			out[k] = v
		}
	}
	return out
}

// sseThroughHop reads the first event while the provider's handler is
// still blocked (a buffering hop would hang here), then releases it.
func sseThroughHop(t *testing.T, h *hubProc, hdr http.Header) {
	req, _ := http.NewRequest(http.MethodGet, h.URL+"/services/providers/single/events", nil)
	req.Header = hdr.Clone()
	c := h.client()
	c.Timeout = 0
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: first alice\n" {
		t.Fatalf("first event %q %v", line, err)
	}
	rel, _ := http.NewRequest(http.MethodGet, h.URL+"/services/providers/single/release", nil)
	rel.Header = hdr.Clone()
	rresp, err := h.client().Do(rel)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(rresp); rresp.StatusCode != 200 {
		t.Fatalf("release: %d %s", rresp.StatusCode, body)
	}
	_ = rresp.Body.Close()
	rest := readAll(resp)
	if !strings.Contains(rest, "data: second") {
		t.Fatalf("rest of stream %q", rest)
	}
}

// websocketThroughHop echoes text and a 10 MiB binary message.
func websocketThroughHop(t *testing.T, h *hubProc) {
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(filepath.Join(h.opts.dataDir, "pki", "serving.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(pem)
	d := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool}, HandshakeTimeout: 10 * time.Second}
	u := "wss" + strings.TrimPrefix(h.URL, "https") + "/services/providers/single/ws"
	conn, resp, err := d.Dial(u, http.Header{"Authorization": {"Bearer alice-token"}, "X-Wharf-Workspace": {"root:single"}, "X-Kedge-User": {"mallory"}})
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		t.Fatalf("dial: %v (%d)", err, code)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	if _, msg, err := conn.ReadMessage(); err != nil || string(msg) != "hello alice" {
		t.Fatalf("greeting %q %v", msg, err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 10<<16)
	for _, m := range [][]byte{[]byte("ping"), big} {
		if err := conn.WriteMessage(websocket.BinaryMessage, m); err != nil {
			t.Fatal(err)
		}
		_, got, err := conn.ReadMessage()
		if err != nil || !bytes.Equal(got, m) {
			t.Fatalf("echo of %d bytes: got %d bytes, %v", len(m), len(got), err)
		}
	}
}

// pidAlive treats a zombie as dead: it runs nothing.
func pidAlive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}
