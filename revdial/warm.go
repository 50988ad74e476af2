package revdial

import (
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// warmPool keeps spare pickups open for one dialer so that Dial can return
// one without a round trip to the agent.
type warmPool struct {
	d    *Dialer
	size int
	kick chan struct{} // buffered(1): coalesces refill requests

	mu       sync.Mutex
	idle     []warmConn // oldest first
	inflight int
	closed   bool
}

type warmConn struct {
	c    *conn
	born time.Time
}

// activation is the text frame that releases a warm pickup on the agent.
const activation = "go"

func newWarmPool(d *Dialer, size int) *warmPool {
	return &warmPool{d: d, size: size, kick: make(chan struct{}, 1)}
}

// take pops the freshest idle pickup, activates it and asks for a refill.
// It returns nil when the pool is empty.
func (w *warmPool) take() *conn {
	defer w.refill()
	for {
		w.mu.Lock()
		n := len(w.idle)
		if n == 0 {
			w.mu.Unlock()
			return nil
		}
		wc := w.idle[n-1]
		w.idle = w.idle[:n-1]
		w.mu.Unlock()
		if wc.c.activate() == nil {
			return wc.c
		}
		wc.c.Close() // the agent or an intermediary dropped it; try the next
	}
}

func (w *warmPool) refill() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// run is the pool's only long-lived goroutine. It tops the pool up on
// demand, recycles stale pickups, and drains the pool when the tunnel dies.
func (w *warmPool) run() {
	maxAge := w.d.opts.WarmMaxAge
	t := time.NewTicker(maxAge / 3)
	defer t.Stop()
	for {
		w.expire(maxAge)
		w.fill()
		select {
		case <-w.d.ctx.Done():
			w.drain()
			return
		case <-w.kick:
		case <-t.C:
		}
	}
}

// fill starts enough pickups to bring idle+inflight up to size. A failed
// pickup is not retried until the next kick or tick, so an agent that
// refuses warm pickups cannot make the server spin.
func (w *warmPool) fill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for !w.closed && len(w.idle)+w.inflight < w.size {
		if !w.d.tasks.Go(w.one) {
			return
		}
		w.inflight++
	}
}

func (w *warmPool) one() {
	c, err := w.d.pickup(w.d.ctx, true)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inflight--
	if err != nil {
		return
	}
	if w.closed {
		c.Close()
		return
	}
	w.idle = append(w.idle, warmConn{c: c, born: time.Now()})
}

func (w *warmPool) expire(maxAge time.Duration) {
	w.mu.Lock()
	var stale []warmConn
	for len(w.idle) > 0 && time.Since(w.idle[0].born) > maxAge {
		stale = append(stale, w.idle[0])
		w.idle = w.idle[1:]
	}
	w.mu.Unlock()
	for _, wc := range stale {
		wc.c.Close()
	}
}

func (w *warmPool) drain() {
	w.mu.Lock()
	w.closed = true
	idle := w.idle
	w.idle = nil
	w.mu.Unlock()
	for _, wc := range idle {
		wc.c.Close()
	}
}

// activate sends the activation frame on a warm pickup.
func (c *conn) activate() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(DefaultWriteTimeout))
	err := c.ws.WriteMessage(websocket.TextMessage, []byte(activation))
	_ = c.ws.SetWriteDeadline(time.Time{})
	return err
}
