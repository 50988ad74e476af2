package revdial

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// rawHub plays the server side of the control channel by hand, so a test
// can script control messages and inspect what the agent answers.
type rawHub struct {
	hs      *httptest.Server
	control chan *websocket.Conn
}

func newRawHub(t *testing.T, pickup http.Handler) *rawHub {
	t.Helper()
	rh := &rawHub{control: make(chan *websocket.Conn, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("/control", func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err == nil {
			rh.control <- ws
		}
	})
	mux.Handle("/pickup/", pickup)
	rh.hs = httptest.NewServer(mux)
	t.Cleanup(func() {
		rh.hs.CloseClientConnections()
		rh.hs.Close()
	})
	return rh
}

// connect starts a Listener against rh and returns the hub's end of its
// control channel.
func (rh *rawHub) connect(t *testing.T, opts Options) (*Listener, *websocket.Conn) {
	t.Helper()
	base := "ws://" + rh.hs.Listener.Addr().String()
	ws, _, err := websocket.DefaultDialer.Dial(base+"/control", nil)
	if err != nil {
		t.Fatal(err)
	}
	open := func(ctx context.Context, connPath string) (*websocket.Conn, error) {
		c, resp, err := websocket.DefaultDialer.DialContext(ctx, base+connPath, nil)
		if err != nil && resp != nil {
			return nil, &statusError{code: resp.StatusCode, err: err}
		}
		return c, err
	}
	l := NewListener(ws, open, opts)
	t.Cleanup(func() { l.Close() })
	ctl := <-rh.control
	t.Cleanup(func() { ctl.Close() })
	return l, ctl
}

type statusError struct {
	code int
	err  error
}

func (e *statusError) Error() string { return http.StatusText(e.code) + ": " + e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

func sendMsg(t *testing.T, ws *websocket.Conn, m Message) {
	t.Helper()
	if err := ws.WriteMessage(websocket.TextMessage, m.AppendLine(nil)); err != nil {
		t.Fatal(err)
	}
}

func readMsg(t *testing.T, ws *websocket.Conn) Message {
	t.Helper()
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, data, err := ws.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := ParseMessages(data)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("control frame %q: %v", data, err)
	}
	return msgs[0]
}

func TestAgentPickupFailures(t *testing.T) {
	tests := []struct {
		name      string
		pickup    http.HandlerFunc
		handshake time.Duration
		wantErr   string
	}{
		{
			name:      "refused with 4xx",
			pickup:    NewServer("/pickup", Options{}).ServeHTTP, // knows no token
			handshake: 30 * time.Second,
			wantErr:   "Not Found",
		},
		{
			name: "never answers",
			pickup: func(w http.ResponseWriter, r *http.Request) {
				<-r.Context().Done() // holds the request until the agent gives up
			},
			handshake: 200 * time.Millisecond,
			wantErr:   "timeout",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			noLeaks(t)
			rh := newRawHub(t, tc.pickup)
			opts := fastOptions()
			opts.HandshakeTimeout = tc.handshake
			l, ctl := rh.connect(t, opts)

			path := connPath("/pickup", newToken(), false)
			sendMsg(t, ctl, Message{Command: CmdConnReady, ConnPath: path})
			m := readMsg(t, ctl)
			if m.Command != CmdPickupFailed || m.ConnPath != path || !strings.Contains(m.Err, tc.wantErr) {
				t.Fatalf("agent answered %+v; want pickup-failed for %s mentioning %q", m, path, tc.wantErr)
			}
			// The agent survives: it still answers keep-alives.
			sendMsg(t, ctl, Message{Command: CmdKeepAlive})
			if m := readMsg(t, ctl); m.Command != CmdPong {
				t.Fatalf("after a failed pickup the agent answered %+v, want pong", m)
			}
			if err := l.Err(); err != nil {
				t.Fatalf("listener died: %v", err)
			}
		})
	}
}

// TestAgentIgnoresGarbage: unknown commands are ignored; a malformed frame
// ends the control channel rather than being half-understood.
func TestAgentIgnoresGarbage(t *testing.T) {
	noLeaks(t)
	rh := newRawHub(t, http.NotFoundHandler())
	l, ctl := rh.connect(t, fastOptions())
	sendMsg(t, ctl, Message{Command: "from-the-future"})
	sendMsg(t, ctl, Message{Command: CmdKeepAlive})
	if m := readMsg(t, ctl); m.Command != CmdPong {
		t.Fatalf("got %+v, want pong", m)
	}
	if err := ctl.WriteMessage(websocket.TextMessage, []byte("not json\n")); err != nil {
		t.Fatal(err)
	}
	<-l.Done()
	if _, err := l.Accept(); err == nil {
		t.Fatal("Accept succeeded on a dead listener")
	}
}

// TestAgentBoundsQueuedPickups: a server that floods conn-ready gets
// pickup-failed "agent busy" beyond the bound instead of an agent that
// grows without limit.
func TestAgentBoundsQueuedPickups(t *testing.T) {
	noLeaks(t)
	rh := newRawHub(t, http.NotFoundHandler())
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+rh.hs.Listener.Addr().String()+"/control", nil)
	if err != nil {
		t.Fatal(err)
	}
	stuck := func(ctx context.Context, _ string) (*websocket.Conn, error) {
		<-ctx.Done() // never completes while the listener lives
		return nil, ctx.Err()
	}
	l := NewListener(ws, stuck, fastOptions())
	t.Cleanup(func() { l.Close() })
	ctl := <-rh.control
	t.Cleanup(func() { ctl.Close() })

	var frame []byte
	for i := 0; i <= maxQueuedPickups; i++ {
		frame = Message{Command: CmdConnReady, ConnPath: connPath("/pickup", newToken(), false)}.AppendLine(frame)
		if len(frame) > MaxControlMessage/2 || i == maxQueuedPickups {
			if err := ctl.WriteMessage(websocket.TextMessage, frame); err != nil {
				t.Fatal(err)
			}
			frame = frame[:0]
		}
	}
	m := readMsg(t, ctl)
	if m.Command != CmdPickupFailed || m.Err != "agent busy" {
		t.Fatalf("got %+v, want pickup-failed: agent busy", m)
	}
}
