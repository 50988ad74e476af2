package revdial

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Errors returned by Dial. They are wrapped with detail; test with errors.Is.
var (
	ErrTunnelClosed  = errors.New("revdial: tunnel closed")
	ErrPickupTimeout = errors.New("revdial: agent did not pick up in time")
	ErrPickupFailed  = errors.New("revdial: agent reported pickup failure")
)

var (
	errReplaced     = fmt.Errorf("%w: replaced by a newer tunnel with the same id", ErrTunnelClosed)
	errClosedByUser = fmt.Errorf("%w: closed", ErrTunnelClosed)
)

// Dialer is the server's end of one agent's control channel. Its Dial opens
// a new connection to that agent.
type Dialer struct {
	id   string
	s    *Server
	ws   *websocket.Conn
	opts Options
	warm *warmPool // nil when Options.WarmPickups is 0

	ctx    context.Context // cancelled by shutdown; every goroutine watches it
	cancel context.CancelFunc
	tasks  group

	wmu sync.Mutex // one control writer at a time

	once sync.Once
	done chan struct{}
	err  error // set before done is closed
}

// NewDialer adopts an accepted control websocket as the tunnel of agent id.
// A live dialer already registered under id is closed and replaced.
func (s *Server) NewDialer(id string, control *websocket.Conn) (*Dialer, error) {
	if control == nil {
		return nil, errors.New("revdial: NewDialer: nil control websocket")
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Dialer{id: id, s: s, ws: control, opts: s.opts, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	if s.opts.WarmPickups > 0 {
		d.warm = newWarmPool(d, s.opts.WarmPickups)
	}
	control.SetReadLimit(MaxControlMessage)
	if err := s.register(d); err != nil {
		cancel()
		return nil, err
	}
	d.tasks.Go(d.readLoop)
	d.tasks.Go(d.keepAliveLoop)
	if d.warm != nil {
		d.tasks.Go(d.warm.run)
	}
	return d, nil
}

// ID returns the id the dialer was registered under.
func (d *Dialer) ID() string { return d.id }

// Done is closed when the tunnel is dead: closed, replaced, or silent past
// the read deadline.
func (d *Dialer) Done() <-chan struct{} { return d.done }

// Err returns why the tunnel died, or nil while it is alive.
func (d *Dialer) Err() error {
	select {
	case <-d.done:
		return d.err
	default:
		return nil
	}
}

// Close ends the tunnel and waits for its goroutines. Connections already
// returned by Dial stay open. It is safe to call more than once.
func (d *Dialer) Close() error {
	d.shutdown(errClosedByUser)
	d.tasks.CloseAndWait()
	return nil
}

// shutdown marks the tunnel dead once; every goroutine of the dialer sees
// d.ctx cancelled and exits on its own.
func (d *Dialer) shutdown(err error) {
	d.once.Do(func() {
		d.err = err
		// Unregister first: once Done is closed, Server.Dialer must no
		// longer return this dialer.
		d.s.unregister(d)
		d.cancel()
		close(d.done)
		// WriteControl may run concurrently with a blocked data write, so
		// a stuck peer cannot hold shutdown up.
		msg := websocket.FormatCloseMessage(websocket.CloseGoingAway, "")
		_ = d.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(100*time.Millisecond))
		d.ws.Close()
	})
}

// Dial asks the agent for a new connection and returns it once the agent's
// pickup arrives, or takes a warm pickup at once if one is pooled.
func (d *Dialer) Dial(ctx context.Context) (net.Conn, error) {
	d.s.stats.dials.Add(1)
	c, err := d.dial(ctx)
	if err != nil {
		d.s.stats.dialErrors.Add(1)
		return nil, err
	}
	return c, nil
}

func (d *Dialer) dial(ctx context.Context) (net.Conn, error) {
	if d.warm != nil {
		if c := d.warm.take(); c != nil {
			d.s.stats.warmHits.Add(1)
			return c, nil
		}
		d.s.stats.warmMisses.Add(1)
	}
	c, err := d.pickup(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("revdial: dial %s: %w", d.id, err)
	}
	return c, nil
}

// pickup mints a token, sends conn-ready and waits for the matching pickup.
// The token is withdrawn on every exit path except delivery, and whoever
// withdraws it owns the single result (see pending).
func (d *Dialer) pickup(ctx context.Context, warm bool) (*conn, error) {
	if err := d.Err(); err != nil {
		return nil, err
	}
	token, p := d.s.mint(d)
	if d.s.mintHook != nil {
		d.s.mintHook(ctx, token)
	}
	var why error
	if err := d.send(Message{Command: CmdConnReady, ConnPath: connPath(d.s.prefix, token, warm)}); err != nil {
		why = err
	} else {
		t := time.NewTimer(d.opts.PickupWait)
		defer t.Stop()
		select {
		case r := <-p.ch:
			// select picks randomly among ready cases; a caller that has
			// already given up must never be handed a connection.
			if r.conn != nil && ctx.Err() != nil {
				r.conn.Close()
				return nil, context.Cause(ctx)
			}
			return r.conn, r.err
		case <-ctx.Done():
			why = context.Cause(ctx)
		case <-t.C:
			why = fmt.Errorf("%w (waited %v)", ErrPickupTimeout, d.opts.PickupWait)
		case <-d.done:
			why = d.err
		}
	}
	if d.s.take(token, d) == nil {
		// The pickup handler (or a pickup-failed) owns the token and will
		// deliver promptly: the upgrade is bounded by HandshakeTimeout.
		if r := <-p.ch; r.conn != nil {
			r.conn.Close()
		}
	}
	return nil, why
}

// send writes one control message. A failed write kills the tunnel: the
// peer can no longer be told anything.
func (d *Dialer) send(m Message) error {
	err := d.write(m)
	if err != nil {
		d.shutdown(err)
	}
	return err
}

func (d *Dialer) write(m Message) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if err := d.Err(); err != nil {
		return err
	}
	_ = d.ws.SetWriteDeadline(time.Now().Add(d.opts.WriteTimeout))
	if err := d.ws.WriteMessage(websocket.TextMessage, m.AppendLine(nil)); err != nil {
		return fmt.Errorf("%w: write %s: %w", ErrTunnelClosed, m.Command, err)
	}
	return nil
}

func (d *Dialer) readLoop() {
	for {
		_ = d.ws.SetReadDeadline(time.Now().Add(d.opts.ReadDeadline))
		typ, data, err := d.ws.ReadMessage()
		if err != nil {
			d.shutdown(fmt.Errorf("%w: read: %w", ErrTunnelClosed, err))
			return
		}
		if typ != websocket.TextMessage {
			continue
		}
		msgs, perr := ParseMessages(data)
		for _, m := range msgs {
			d.handle(m)
		}
		if perr != nil {
			d.shutdown(fmt.Errorf("%w: %w", ErrTunnelClosed, perr))
			return
		}
	}
}

func (d *Dialer) handle(m Message) {
	switch m.Command {
	case CmdPickupFailed:
		if p := d.s.take(tokenFromPath(m.ConnPath), d); p != nil {
			d.s.stats.pickupFailures.Add(1)
			p.ch <- pickupResult{err: fmt.Errorf("%w: %s", ErrPickupFailed, m.Err)}
		}
	case CmdKeepAlive:
		// An agent may probe too; answering costs nothing.
		_ = d.send(Message{Command: CmdPong})
	}
	// pong and unknown commands only refresh the read deadline.
}

func (d *Dialer) keepAliveLoop() {
	t := time.NewTicker(d.opts.KeepAliveInterval)
	defer t.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-t.C:
			if d.send(Message{Command: CmdKeepAlive}) != nil {
				return
			}
		}
	}
}
