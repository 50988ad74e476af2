package proxy

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/wharfhub/wharf/sdk"
)

// TestBackendStreams reads the first chunk while the provider's handler is
// still blocked: a buffering proxy would hang here until the test timeout,
// so no timing assertion is needed. Any response without a Content-Length
// is a stream, not only text/event-stream.
func TestBackendStreams(t *testing.T) {
	for _, ct := range []string{"text/event-stream", "application/x-ndjson", ""} {
		t.Run(ct, func(t *testing.T) { testStream(t, ct) })
	}
}

func testStream(t *testing.T, contentType string) {
	release := make(chan struct{})
	done := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /services/events", func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		_, _ = io.WriteString(w, "data: "+r.Header.Get(sdk.HeaderUser)+"\n\n")
		_ = http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "data: second\n\n")
	})
	tr, _ := startSocket(t, mux)
	srv := newBackendFront(t, oneProvider(tr), resolver{})

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/services/providers/p/events", nil)
	req.Header.Set("Authorization", "Bearer alice-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if line != "data: alice\n" {
		t.Fatalf("first event %q", line)
	}
	select {
	case <-done:
		t.Fatal("handler finished before the first event was read")
	default:
	}
	close(release)
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rest), "data: second") {
		t.Fatalf("rest %q", rest)
	}
}

// TestBackendWebsocket upgrades through the proxy; the provider sees the
// verified identity on the upgrade request and echoes frames both ways.
func TestBackendWebsocket(t *testing.T) {
	up := websocket.Upgrader{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /services/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		hello := strings.Join([]string{
			strings.Join(r.Header.Values(sdk.HeaderUser), ","),
			r.Header.Get(sdk.HeaderTenant),
			r.Header.Get(sdk.HeaderCluster),
			r.Header.Get("Authorization"),
		}, "|")
		if err := c.WriteMessage(websocket.TextMessage, []byte(hello)); err != nil {
			return
		}
		for {
			mt, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(mt, msg); err != nil {
				return
			}
		}
	})
	tr, _ := startSocket(t, mux)
	srv := newBackendFront(t, oneProvider(tr), resolver{})

	h := http.Header{}
	h.Set("Authorization", "Bearer alice-token")
	h.Set("X-Kedge-User", "mallory")
	h.Set(WorkspaceHeader, "root:acme:team")
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/services/providers/p/ws", h)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	defer c.Close()
	_, hello, err := c.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if want := "alice|root:acme:team|c1team|Bearer alice-token"; string(hello) != want {
		t.Fatalf("provider saw %q, want %q", hello, want)
	}
	for _, m := range []string{"ping", "pong"} {
		if err := c.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
			t.Fatal(err)
		}
		_, got, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != m {
			t.Fatalf("echo %q, want %q", got, m)
		}
	}
}
