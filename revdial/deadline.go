package revdial

import (
	"sync"
	"time"
)

// deadlineErr is returned when a read deadline passes. It satisfies
// net.Error with Timeout() true, like the errors of a real socket.
type deadlineErr struct{}

func (deadlineErr) Error() string   { return "revdial: i/o timeout" }
func (deadlineErr) Timeout() bool   { return true }
func (deadlineErr) Temporary() bool { return true }

// deadline is a resettable timer exposed as a channel that is closed once the
// deadline has passed; setting a new deadline re-arms it. It exists because
// the websocket underneath must never see a read deadline (see conn).
type deadline struct {
	mu     sync.Mutex
	timer  *time.Timer
	expiry chan struct{}
}

func newDeadline() *deadline { return &deadline{expiry: make(chan struct{})} }

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.expiry // the timer is firing; let it finish closing the channel
	}
	d.timer = nil
	expired := isClosed(d.expiry)
	if t.IsZero() || time.Until(t) > 0 {
		if expired {
			d.expiry = make(chan struct{})
		}
		if !t.IsZero() {
			ch := d.expiry
			d.timer = time.AfterFunc(time.Until(t), func() { close(ch) })
		}
		return
	}
	if !expired {
		close(d.expiry)
	}
}

func (d *deadline) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.expiry
}

func (d *deadline) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
