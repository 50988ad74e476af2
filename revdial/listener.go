package revdial

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// maxQueuedPickups bounds the pickups an agent holds at once, waiting for
// a handshake slot or for Accept; conn-ready beyond it is answered with
// pickup-failed at once.
const maxQueuedPickups = 4096

// PickupFunc opens the pickup websocket for connPath, as sent by the server
// in conn-ready. The context bounds the handshake.
type PickupFunc func(ctx context.Context, connPath string) (*websocket.Conn, error)

// Listener is the agent's end of one control channel: a net.Listener whose
// Accept returns the connections the server dials.
type Listener struct {
	ctl  *websocket.Conn
	open PickupFunc
	opts Options
	out  chan net.Conn // unbuffered; may be shared by a Client's sessions
	sem  chan struct{} // bounds concurrent pickup handshakes
	// queued counts pickups started and not finished, waiting or not.
	queued atomic.Int64
	bufs   *buffers

	ctx    context.Context
	cancel context.CancelFunc
	tasks  group
	wmu    sync.Mutex

	once sync.Once
	done chan struct{}
	err  error // set before done is closed
}

// NewListener serves the control websocket control, opening pickups with
// open. The listener dies with the control channel; Close ends both.
func NewListener(control *websocket.Conn, open PickupFunc, opts Options) *Listener {
	return newListener(control, open, opts, make(chan net.Conn))
}

func newListener(control *websocket.Conn, open PickupFunc, opts Options, out chan net.Conn) *Listener {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Listener{
		ctl: control, open: open, opts: opts.withDefaults(), out: out,
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
	}
	l.sem = make(chan struct{}, l.opts.MaxConcurrentPickups)
	l.bufs = newBuffers()
	control.SetReadLimit(MaxControlMessage)
	l.tasks.Go(l.readLoop)
	return l
}

// Accept waits for the next connection dialed by the server.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.out:
		return c, nil
	case <-l.done:
		return nil, l.err
	}
}

// Close closes the control channel and waits for the listener's goroutines.
// Connections already accepted stay open. It is safe to call more than once.
func (l *Listener) Close() error {
	l.shutdown(fmt.Errorf("%w: listener closed", net.ErrClosed))
	l.tasks.CloseAndWait()
	return nil
}

// Addr names the listener by the control channel's local address.
func (l *Listener) Addr() net.Addr { return addr("revdial:" + l.ctl.LocalAddr().String()) }

// Done is closed when the control channel is dead.
func (l *Listener) Done() <-chan struct{} { return l.done }

// Err returns why the control channel died, or nil while it is alive. It
// wraps net.ErrClosed, so servers built on Accept stop cleanly.
func (l *Listener) Err() error {
	select {
	case <-l.done:
		return l.err
	default:
		return nil
	}
}

func (l *Listener) shutdown(err error) {
	l.once.Do(func() {
		if !errors.Is(err, net.ErrClosed) {
			err = fmt.Errorf("%w: %w", net.ErrClosed, err)
		}
		l.err = err
		l.cancel()
		close(l.done)
		// WriteControl may run concurrently with a blocked data write, so
		// a stuck peer cannot hold shutdown up.
		msg := websocket.FormatCloseMessage(websocket.CloseGoingAway, "")
		_ = l.ctl.WriteControl(websocket.CloseMessage, msg, time.Now().Add(100*time.Millisecond))
		l.ctl.Close()
	})
}

func (l *Listener) send(m Message) {
	l.wmu.Lock()
	_ = l.ctl.SetWriteDeadline(time.Now().Add(l.opts.WriteTimeout))
	err := l.ctl.WriteMessage(websocket.TextMessage, m.AppendLine(nil))
	l.wmu.Unlock()
	if err != nil {
		l.shutdown(fmt.Errorf("revdial: control write %s: %w", m.Command, err))
	}
}

func (l *Listener) readLoop() {
	for {
		_ = l.ctl.SetReadDeadline(time.Now().Add(l.opts.ReadDeadline))
		typ, data, err := l.ctl.ReadMessage()
		if err != nil {
			l.shutdown(fmt.Errorf("revdial: control read: %w", err))
			return
		}
		if typ != websocket.TextMessage {
			continue
		}
		msgs, perr := ParseMessages(data)
		for _, m := range msgs {
			switch m.Command {
			case CmdKeepAlive:
				l.send(Message{Command: CmdPong})
			case CmdConnReady:
				// Queued pickups are goroutines; refuse beyond a bound so
				// that a misbehaving server cannot exhaust the agent.
				if l.queued.Load() >= int64(maxQueuedPickups) {
					l.send(Message{Command: CmdPickupFailed, ConnPath: m.ConnPath, Err: "agent busy"})
					continue
				}
				l.queued.Add(1)
				p := m.ConnPath
				if !l.tasks.Go(func() { defer l.queued.Add(-1); l.pickup(p) }) {
					l.queued.Add(-1)
				}
			}
		}
		if perr != nil {
			l.shutdown(perr)
			return
		}
	}
}

// pickup opens one pickup and queues it for Accept. Every exit path either
// hands the conn over or closes it.
func (l *Listener) pickup(connPath string) {
	select {
	case l.sem <- struct{}{}:
	case <-l.ctx.Done():
		return
	}
	// The handshake timeout starts once a slot is free: queueing is bounded
	// by the server's PickupWait instead.
	ctx, cancel := context.WithTimeout(l.ctx, l.opts.HandshakeTimeout)
	ws, err := l.open(ctx, connPath)
	cancel()
	<-l.sem
	if err != nil {
		if l.ctx.Err() == nil {
			l.send(Message{Command: CmdPickupFailed, ConnPath: connPath, Err: err.Error()})
		}
		return
	}
	if isWarmPath(connPath) && !l.awaitActivation(ws) {
		ws.Close()
		return
	}
	c := newConn(ws, l.bufs, nil, nil)
	select {
	case l.out <- c:
	case <-l.ctx.Done():
		c.Close()
	}
}

// awaitActivation holds a warm pickup until the server takes it. Anything
// but the activation text frame (a close, a binary frame) discards it.
func (l *Listener) awaitActivation(ws *websocket.Conn) bool {
	stop := context.AfterFunc(l.ctx, func() { ws.Close() })
	defer stop()
	ws.SetReadLimit(int64(len(activation)) + 64)
	typ, _, err := ws.ReadMessage()
	ws.SetReadLimit(0)
	return err == nil && typ == websocket.TextMessage
}
