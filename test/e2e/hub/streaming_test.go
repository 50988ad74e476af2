package hub

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// sseEvent reads one server-sent event (lines up to a blank line) and
// returns its id and data.
func sseEvent(r *bufio.Reader) (id, data string, err error) {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return id, data, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if id == "" && data == "" {
				continue
			}
			return id, data, nil
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// openStream starts a GET as alice in root:prov and returns the response;
// ctx bounds the whole stream, so a hang fails instead of blocking.
func openStream(ctx context.Context, t *testing.T, c *contractHub, path string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.Header.Set("X-Wharf-Workspace", "root:prov")
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		t.Fatalf("%s = %d %s", path, resp.StatusCode, readAll(resp))
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("%s Content-Type %q", path, ct)
	}
	return resp
}

// testSSE proves events are not buffered: the probe provider writes event
// i+1 only after the test acknowledged event i, so reading event i before
// acknowledging it can only succeed if the hub passed it on by itself.
func testSSE(t *testing.T, c *contractHub) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const n = 5
	resp := openStream(ctx, t, c, fmt.Sprintf("/services/providers/probe/events?stream=sse&n=%d", n))
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	for i := 1; i <= n; i++ {
		id, data, err := sseEvent(r)
		if err != nil {
			t.Fatalf("event %d: %v (a buffering proxy never delivers it)", i, err)
		}
		if id != fmt.Sprint(i) || data != fmt.Sprintf("event %d", i) {
			t.Fatalf("event %d: id %q data %q", i, id, data)
		}
		if r.Buffered() > 0 {
			t.Fatalf("after event %d, %d more bytes already arrived", i, r.Buffered())
		}
		if i == n {
			break
		}
		if code, _, body := c.do(t, aliceToken, http.MethodPost, "/services/providers/probe/ack?stream=sse",
			http.Header{"X-Wharf-Workspace": {"root:prov"}}); code != http.StatusNoContent {
			t.Fatalf("ack %d = %d %s", i, code, body)
		}
	}
	if _, _, err := sseEvent(r); !errors.Is(err, io.EOF) {
		t.Errorf("after the last event: %v, want a clean EOF", err)
	}

	// The sample provider's ticker stream ends cleanly after n events.
	resp = openStream(ctx, t, c, "/services/providers/hello/events?n=3")
	defer resp.Body.Close()
	r = bufio.NewReader(resp.Body)
	for i := 1; i <= 3; i++ {
		if id, data, err := sseEvent(r); err != nil || id != fmt.Sprint(i) || data != fmt.Sprintf("hello %d", i) {
			t.Fatalf("hello event %d: id %q data %q err %v", i, id, data, err)
		}
	}
	if _, _, err := sseEvent(r); !errors.Is(err, io.EOF) {
		t.Errorf("hello after the last event: %v, want a clean EOF", err)
	}
}

// testWebsocket echoes 10 MB, binary and text, through the hub to the
// sample provider and compares byte for byte.
func testWebsocket(t *testing.T, c *contractHub) {
	pool := x509.NewCertPool()
	if pem, err := os.ReadFile(filepath.Join(c.opts.dataDir, "pki", "serving.crt")); err == nil {
		pool.AppendCertsFromPEM(pem)
	}
	d := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool}, HandshakeTimeout: 30 * time.Second}
	url := "wss" + strings.TrimPrefix(c.URL, "https") + "/services/providers/hello/echo"
	hdr := http.Header{"Authorization": {"Bearer " + aliceToken}, "X-Wharf-Workspace": {"root:prov"}}

	// Unauthenticated upgrades never reach the provider.
	if _, resp, err := d.Dial(url, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous upgrade: %v %v", resp, err)
	}
	conn, resp, err := d.Dial(url, hdr)
	if err != nil {
		t.Fatalf("dial %s: %v (%v)", url, err, resp)
	}
	defer conn.Close()
	big := make([]byte, 10<<20)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("hello wharf ", 1<<20/12)
	for _, m := range []struct {
		typ  int
		data []byte
	}{{websocket.BinaryMessage, big}, {websocket.TextMessage, []byte(text)}, {websocket.BinaryMessage, []byte{}}} {
		if err := conn.SetWriteDeadline(time.Now().Add(2 * time.Minute)); err != nil {
			t.Fatal(err)
		}
		// Written from a goroutine: the echo comes back while we still
		// write, and neither side may wait for the other to finish.
		werr := make(chan error, 1)
		go func() { werr <- conn.WriteMessage(m.typ, m.data) }()
		if err := conn.SetReadDeadline(time.Now().Add(2 * time.Minute)); err != nil {
			t.Fatal(err)
		}
		typ, got, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("reading the %d-byte echo: %v", len(m.data), err)
		}
		if err := <-werr; err != nil {
			t.Fatalf("writing %d bytes: %v", len(m.data), err)
		}
		if typ != m.typ || !bytes.Equal(got, m.data) {
			t.Fatalf("echo of %d bytes (type %d) came back as %d bytes (type %d), different", len(m.data), m.typ, len(got), typ)
		}
	}
	if err := conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")); err != nil {
		t.Errorf("close: %v", err)
	}
}
