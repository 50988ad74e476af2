package revdial

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

type dialIDKey struct{}

// tokenRecorder proves correlation end to end. The hub records which dial
// minted each token (through Server.mintHook); the agent records which token
// each pickup websocket was opened for and, as its first line on that
// connection, tells the hub that token. The hub side then checks that the
// token belongs to the dial that received the connection.
type tokenRecorder struct {
	minted sync.Map // token -> dial id
	opened sync.Map // agent-side local address -> token
}

func (r *tokenRecorder) hook(ctx context.Context, token string) {
	if id, ok := ctx.Value(dialIDKey{}).(int); ok {
		r.minted.Store(token, id)
	}
}

func (r *tokenRecorder) wrap(open PickupFunc) PickupFunc {
	return func(ctx context.Context, connPath string) (*websocket.Conn, error) {
		ws, err := open(ctx, connPath)
		if err == nil {
			r.opened.Store(ws.LocalAddr().String(), tokenFromPath(connPath))
		}
		return ws, err
	}
}

// announceThenEcho is the agent application: it sends the pickup token,
// then echoes.
func (r *tokenRecorder) announceThenEcho(c net.Conn) {
	tok, _ := r.opened.Load(c.LocalAddr().String())
	if _, err := fmt.Fprintf(c, "%v\n", tok); err != nil {
		return
	}
	echo(c)
}

// checkDial reads the token announcement and the echo of the dial id.
func (r *tokenRecorder) checkDial(c net.Conn, id int) error {
	br := bufio.NewReader(c)
	tok, err := br.ReadString('\n')
	if err != nil {
		return fmt.Errorf("dial %d: read token: %w", id, err)
	}
	tok = strings.TrimSuffix(tok, "\n")
	owner, ok := r.minted.Load(tok)
	if !ok || owner.(int) != id {
		return fmt.Errorf("dial %d received the pickup of dial %v (token %q)", id, owner, tok)
	}
	want := fmt.Sprintf("id-%d", id)
	if _, err := fmt.Fprintf(c, "%s\n", want); err != nil {
		return fmt.Errorf("dial %d: write: %w", id, err)
	}
	got, err := br.ReadString('\n')
	if err != nil || strings.TrimSuffix(got, "\n") != want {
		return fmt.Errorf("dial %d: echo %q, %v", id, got, err)
	}
	return nil
}

// TestConcurrentDials runs 1,000 concurrent dials over one tunnel through a
// real TLS loopback server and requires every connection to have reached
// exactly the dial that asked for it.
func TestConcurrentDials(t *testing.T) {
	noLeaks(t)
	const n = 1000
	rec := &tokenRecorder{}
	opts := fastOptions()
	opts.PickupWait = 2 * time.Minute // a bound for a loaded CI box, not a target
	// Dead-tunnel detection is not under test here; under -race on a busy
	// box a thousand TLS handshakes can starve keepalives past 2 s.
	opts.ReadDeadline = time.Minute
	// Likewise the 5 s control write deadline: a pong stuck behind a
	// thousand pickups on a loaded box (load ~25) kills the tunnel, and
	// the listener then closes, as a TCP backlog would, the pickups the
	// hub had already delivered but the agent had not yet accepted; the
	// hub side reads those as close 1006. That is dead-peer detection
	// working, which other tests cover; here it hides correlation.
	opts.WriteTimeout = time.Minute
	h := newHub(t, opts)
	h.srv.mintHook = rec.hook
	ln, d := h.agent("busy", opts, rec.wrap)
	serve(t, ln, rec.announceThenEcho)

	var mismatches, failures atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.WithValue(context.Background(), dialIDKey{}, i)
			c, err := d.Dial(ctx)
			if err != nil {
				failures.Add(1)
				errs <- err
				return
			}
			defer c.Close()
			if err := rec.checkDial(c, i); err != nil {
				mismatches.Add(1)
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m, f := mismatches.Load(), failures.Load(); m != 0 || f != 0 {
		// Say whether the tunnel itself died, so a failure tells a
		// correlation bug from a tunnel torn down under load.
		t.Fatalf("%d mismatches, %d failed dials out of %d (agent listener: %v; hub dialer: %v)",
			m, f, n, ln.Err(), d.Err())
	}
	if st := h.srv.Stats(); st.Dials != n || st.DialErrors != 0 {
		t.Fatalf("stats = %+v", st)
	}
}
