package testkit_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/wharfhub/wharf/sdk"
	"github.com/wharfhub/wharf/sdk/testkit"
)

// streamer serves an SSE endpoint that only finishes once the client has
// read the first event, and a raw upgrade endpoint that echoes lines. Both
// hang (and hit the test timeout) if the stand-in buffered or dropped the
// upgrade, so no timing assertion is needed.
type streamer struct{ release chan struct{} }

func (s streamer) Manifest() sdk.Manifest {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first\n\n")
		http.NewResponseController(w).Flush()
		select {
		case <-s.release:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "data: second\n\n")
	})
	mux.HandleFunc("GET /echo", func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "echo") {
			http.Error(w, "upgrade required", http.StatusUpgradeRequired)
			return
		}
		user := r.Header.Get(sdk.HeaderUser)
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer func() { _ = conn.Close() }()
		_, _ = fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\nX-Seen-User: %s\r\n\r\n", user)
		_ = brw.Flush()
		for {
			line, err := brw.ReadString('\n')
			if err != nil {
				return
			}
			_, _ = brw.WriteString(line)
			_ = brw.Flush()
		}
	})
	return sdk.Manifest{Name: "streamer", Backend: mux}
}

func TestStreamsAreNotBuffered(t *testing.T) {
	p := streamer{release: make(chan struct{})}
	hub := testkit.Start(t, p, testkit.Options{Users: map[string]sdk.Identity{"t": {User: "alice"}}})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, hub.BackendURL("/events"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer t")
	resp, err := hub.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: first\n" {
		t.Fatalf("first event: %q %v", line, err)
	}
	close(p.release)
	rest, err := io.ReadAll(br)
	if err != nil || !strings.Contains(string(rest), "data: second") {
		t.Fatalf("rest: %q %v", rest, err)
	}
}

func TestUpgradeCarriesIdentity(t *testing.T) {
	hub := testkit.Start(t, streamer{}, testkit.Options{Users: map[string]sdk.Identity{"t": {User: "alice"}}})
	u, err := url.Parse(hub.BackendURL("/echo"))
	if err != nil {
		t.Fatal(err)
	}
	var d net.Dialer
	conn, err := d.DialContext(t.Context(), "tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_, err = fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer t\r\nX-Kedge-User: mallory\r\n"+
		"Connection: Upgrade\r\nUpgrade: echo\r\n\r\n", u.Path, u.Host)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("X-Seen-User") != "alice" {
		t.Fatalf("upgrade: %d, provider saw user %q", resp.StatusCode, resp.Header.Get("X-Seen-User"))
	}
	if _, err := io.WriteString(conn, "ping\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("echo: %q %v", line, err)
	}
}
