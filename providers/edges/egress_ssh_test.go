package edges

import (
	"bytes"
	"crypto/rand"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/wharfhub/wharf/sdk"
)

func wsURL(u string) string { return "ws" + strings.TrimPrefix(u, "http") }

// wsDialStatus dials the ssh egress and returns the refusal's code and body.
func wsDialStatus(t *testing.T, u string, id sdk.Identity, origin string) (int, string) {
	t.Helper()
	h := http.Header{}
	sdk.SetIdentity(h, id)
	if origin != "" {
		h.Set("Origin", origin)
	}
	ws, resp, err := websocket.DefaultDialer.Dial(wsURL(u), h)
	if err == nil {
		ws.Close()
		return http.StatusSwitchingProtocols, ""
	}
	if resp == nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestEgressSSHStream: binary frames reach the edge's TCP service and its
// bytes come back, byte-exact; closing the client ends the edge's stream.
func TestEgressSSHStream(t *testing.T) {
	f := newEgressFixture(t, nil)
	h := http.Header{}
	sdk.SetIdentity(h, alice)
	h.Set("Authorization", "Bearer hub-secret")
	ws, resp, err := websocket.DefaultDialer.Dial(wsURL(f.url("c1", "srv", "/ssh")), h)
	if err != nil {
		t.Fatalf("%v %v", err, resp)
	}
	payload := make([]byte, 1<<20)
	_, _ = rand.Read(payload)
	go func() {
		for off := 0; off < len(payload); off += 7000 {
			end := min(off+7000, len(payload))
			if ws.WriteMessage(websocket.BinaryMessage, payload[off:end]) != nil {
				return
			}
		}
	}()
	var got []byte
	_ = ws.SetReadDeadline(time.Now().Add(60 * time.Second))
	for len(got) < len(payload) {
		typ, b, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("after %d bytes: %v", len(got), err)
		}
		if typ != websocket.BinaryMessage {
			t.Fatalf("frame type %d", typ)
		}
		got = append(got, b...)
	}
	if !bytes.Equal(got, payload) {
		t.Fatal("echoed bytes differ")
	}
	waitFor(t, 10*time.Second, func() bool { return f.metrics.get("server from_edge") >= len(payload) })
	ws.Close()
}

// TestEgressSSHEdgeCloses: when the edge's side ends the stream, the
// client gets a close frame.
func TestEgressSSHEdgeCloses(t *testing.T) {
	f := newEgressFixture(t, nil)
	// A second server edge whose service says one line and hangs up.
	bye := f.hub.agent("c1", "bye")
	go func() {
		for {
			c, err := bye.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("SSH-2.0-test\r\n"))
			_ = c.Close()
		}
	}()
	f.authz.allow["alice c1/bye proxy"] = true
	f.egress.cfg.Edge = edgeStore{"c1/bye": edgeOf("server")}.get
	h := http.Header{}
	sdk.SetIdentity(h, alice)
	ws, _, err := websocket.DefaultDialer.Dial(wsURL(f.url("c1", "bye", "/ssh")), h)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, b, err := ws.ReadMessage()
	if err != nil || string(b) != "SSH-2.0-test\r\n" {
		t.Fatalf("%q %v", b, err)
	}
	_, _, err = ws.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("want a normal close, got %v", err)
	}
}

// TestEgressSSHOrigin: a browser page from another origin is refused
// before authorization; the hub's own origin and non-browsers are not.
func TestEgressSSHOrigin(t *testing.T) {
	f := newEgressFixture(t, nil)
	calls := f.authz.calls.Load()
	code, body := wsDialStatus(t, f.url("c1", "srv", "/ssh"), alice, "https://evil.example")
	if code != 403 || !strings.Contains(body, "cross-origin websocket refused") {
		t.Fatalf("%d %s", code, body)
	}
	if f.authz.calls.Load() != calls {
		t.Error("authorizer consulted for a cross-origin request")
	}
	if code, body := wsDialStatus(t, f.url("c1", "srv", "/ssh"), alice, f.ps.URL); code != 101 {
		t.Fatalf("same origin: %d %s", code, body)
	}
	if code, body := wsDialStatus(t, f.url("c1", "srv", "/ssh"), alice, ""); code != 101 {
		t.Fatalf("no origin: %d %s", code, body)
	}
	// Not a websocket at all.
	resp, err := http.DefaultClient.Do(asHub(t, "GET", f.url("c1", "srv", "/ssh"), alice))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("plain GET: %d", resp.StatusCode)
	}
	// A broken handshake (no key, no version) is refused with a Status.
	req := asHub(t, "GET", f.url("c1", "srv", "/ssh"), alice)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), `"kind":"Status"`) {
		t.Fatalf("broken handshake: %d %s", resp.StatusCode, b)
	}
}
