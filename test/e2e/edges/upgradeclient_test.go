package edges

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// spdyEcho sends an SPDY/3.1 upgrade request to rawURL with the bearer
// token, expects 101 and then checks that 1 MiB of random bytes come back
// byte for byte. It returns the response status line on a non-101 answer.
func spdyEcho(t *testing.T, caPEM []byte, rawURL, token string) error {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
	if err != nil {
		return fmt.Errorf("dial %s: %w", u.Host, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
	req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\nContent-Length: 0\r\n", u.RequestURI(), u.Host)
	if token != "" {
		req += "Authorization: Bearer " + token + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		return err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return fmt.Errorf("reading the upgrade answer: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("upgrade answered %s: %s", resp.Status, body)
	}
	if !strings.EqualFold(resp.Header.Get("Upgrade"), "SPDY/3.1") {
		return fmt.Errorf("101 with Upgrade %q", resp.Header.Get("Upgrade"))
	}
	payload := make([]byte, 1<<20)
	_, _ = rand.Read(payload)
	errc := make(chan error, 1)
	go func() {
		_, err := conn.Write(payload)
		errc <- err
	}()
	got := make([]byte, len(payload))
	if _, err := io.ReadFull(br, got); err != nil {
		return fmt.Errorf("reading the echo: %w", err)
	}
	if err := <-errc; err != nil {
		return err
	}
	if !bytes.Equal(got, payload) {
		return fmt.Errorf("echo of %d bytes differs", len(payload))
	}
	return nil
}

// websocketEcho dials rawURL (https) as a websocket with the kubectl exec
// subprotocols and checks that a text, an empty and a 4 MiB binary message
// come back unchanged, with the subprotocol the echo chose (v5).
func websocketEcho(t *testing.T, caPEM []byte, rawURL, token string) error {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	d := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool}, HandshakeTimeout: 30 * time.Second, Subprotocols: []string{"v5.channel.k8s.io", "v4.channel.k8s.io"}}
	hdr := http.Header{}
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	c, resp, err := d.Dial("wss"+strings.TrimPrefix(rawURL, "https"), hdr)
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			return fmt.Errorf("websocket dial: %d %s: %w", resp.StatusCode, body, err)
		}
		return fmt.Errorf("websocket dial: %w", err)
	}
	defer c.Close()
	if c.Subprotocol() != "v5.channel.k8s.io" {
		return fmt.Errorf("subprotocol %q, want v5.channel.k8s.io", c.Subprotocol())
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Minute))
	big := make([]byte, 4<<20)
	_, _ = rand.Read(big)
	msgs := []struct {
		typ int
		b   []byte
	}{{websocket.TextMessage, []byte("\x00hello stdin")}, {websocket.BinaryMessage, []byte{}}, {websocket.BinaryMessage, big}}
	for _, m := range msgs {
		if err := c.WriteMessage(m.typ, m.b); err != nil {
			return err
		}
		typ, got, err := c.ReadMessage()
		if err != nil {
			return fmt.Errorf("reading the echo: %w", err)
		}
		if typ != m.typ || !bytes.Equal(got, m.b) {
			return fmt.Errorf("echo of a %d-byte message (type %d): got %d bytes type %d", len(m.b), m.typ, len(got), typ)
		}
	}
	return nil
}

// TestUpgradeEchoDirect checks the echo endpoint and the two upgrade
// clients on their own, without any edge, so an edge test's failure is
// never the fixture's.
func TestUpgradeEchoDirect(t *testing.T) {
	t.Parallel()
	e := startUpgradeEcho(t)
	if err := spdyEcho(t, e.CAPEM, e.URL+"/api/v1/namespaces/default/pods/p/exec?command=sh&stdin=true", "tok"); err != nil {
		t.Fatalf("spdy: %v", err)
	}
	if err := websocketEcho(t, e.CAPEM, e.URL+"/api/v1/namespaces/default/pods/p/attach?stdin=true", "tok"); err != nil {
		t.Fatalf("websocket: %v", err)
	}
	r, ok := e.lastTo("/exec")
	if !ok || r.Header.Get("Authorization") != "Bearer tok" || r.Header.Get("Upgrade") != "SPDY/3.1" {
		t.Fatalf("recorded %+v", r)
	}
	if code := plainGet(t, e); code != http.StatusNotFound {
		t.Fatalf("plain GET answered %d", code)
	}
}

func plainGet(t *testing.T, e *upgradeEcho) int {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.CAPEM)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get(e.URL + "/api")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
