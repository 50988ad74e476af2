package revdial

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestSameIDReplaces: an agent that reconnects before its old tunnel timed
// out replaces it; the old dialer dies and lookups return the new one.
func TestSameIDReplaces(t *testing.T) {
	noLeaks(t)
	h := newHub(t, fastOptions())
	_, old := h.agent("dup", fastOptions(), nil)
	ln, cur := h.agent("dup", fastOptions(), nil)
	serve(t, ln, echo)
	<-old.Done()
	if !errors.Is(old.Err(), ErrTunnelClosed) {
		t.Fatalf("old dialer Err() = %v", old.Err())
	}
	if got, ok := h.srv.Dialer("dup"); !ok || got != cur {
		t.Fatal("lookup does not return the newer dialer")
	}
	if st := h.srv.Stats(); st.LiveTunnels != 1 || st.Tunnels != 2 {
		t.Fatalf("stats = %+v", st)
	}
	c, err := cur.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestServerClose(t *testing.T) {
	noLeaks(t)
	h := newHub(t, fastOptions())
	ln, d := h.agent("a1", fastOptions(), nil)
	h.srv.Close()
	<-d.Done()
	<-ln.Done()
	if _, err := d.Dial(context.Background()); !errors.Is(err, ErrTunnelClosed) {
		t.Fatalf("Dial after Close = %v", err)
	}
	if _, err := h.srv.NewDialer("late", nil); err == nil {
		t.Fatal("NewDialer accepted a nil websocket")
	}
	wd := &websocket.Dialer{TLSClientConfig: h.cliTLS}
	ws, _, err := wd.Dial(h.controlURL("late"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := <-h.upgradeErrs; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("control upgrade after Close = %v, want ErrServerClosed", err)
	}
	h.srv.Close() // idempotent
	d.Close()
}

// TestPickupHandlerRefusals: requests that are not a live pickup never
// reach a dial, and a plain GET does not spend a token.
func TestPickupHandlerRefusals(t *testing.T) {
	noLeaks(t)
	g := newGate()
	h := newHub(t, fastOptions())
	ln, d := h.agent("a1", fastOptions(), g.wrap)
	serve(t, ln, echo)
	errc := make(chan error, 1)
	go func() {
		c, err := d.Dial(context.Background())
		if err == nil {
			_, err = roundTrip(c, "still mine")
			c.Close()
		}
		errc <- err
	}()
	path := <-g.started
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: h.cliTLS}, Timeout: 30 * time.Second}
	defer cl.CloseIdleConnections()
	base := "https://" + h.addr()
	tests := []struct {
		name string
		path string
		want int
	}{
		{"plain GET with the live token", path, http.StatusBadRequest},
		{"unknown token", "/pickup/" + newToken(), http.StatusBadRequest},
		{"no token", "/pickup/", http.StatusBadRequest},
	}
	for _, tc := range tests {
		resp, err := cl.Get(base + tc.path)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
	g.release <- struct{}{} // the real pickup still completes its dial
	if err := <-errc; err != nil {
		t.Fatalf("dial after stray requests: %v", err)
	}
}

func TestWriteDeadline(t *testing.T) {
	noLeaks(t)
	h := newHub(t, fastOptions())
	ln, d := h.agent("a1", fastOptions(), nil)
	serve(t, ln, echo)
	c, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetWriteDeadline(time.Now().Add(-time.Second))
	var ne net.Error
	if _, err := c.Write([]byte("late")); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("write past deadline = %v, want a timeout", err)
	}
}
