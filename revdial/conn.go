package revdial

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// chunkSize is the unit the background reader moves (two TLS records), and
// the size of a pickup's write buffer (one frame per Write of up to this
// size).
const chunkSize = 32 << 10

// chunksQueued bounds what a connection buffers ahead of a slow reader:
// with the chunk being read, at most three chunks (96 KiB) per connection.
const chunksQueued = 2

// buffers pools read chunks. Each Server and Listener owns one, so that
// the package keeps no global state.
type buffers struct{ p sync.Pool }

func newBuffers() *buffers {
	b := &buffers{}
	b.p.New = func() any { s := make([]byte, chunkSize); return &s }
	return b
}

func (b *buffers) get() *[]byte  { return b.p.Get().(*[]byte) }
func (b *buffers) put(s *[]byte) { b.p.Put(s) }

// conn adapts a pickup websocket to net.Conn.
//
// gorilla/websocket makes every read error permanent, including a deadline
// expiry, while net.Conn users (net/http's server, for one) set a deadline in
// the past to abort a read and then keep reading. So the websocket is read by
// one background goroutine that never sees a deadline, and Read applies the
// deadline itself while waiting for that goroutine's chunks.
type conn struct {
	ws   *websocket.Conn
	bufs *buffers

	startReader sync.Once
	chunks      chan chunk    // filled by readLoop, closed when it ends
	closed      chan struct{} // closed by Close
	closeOnce   sync.Once

	rmu     sync.Mutex // serialises Read and owns cur/rerr
	cur     chunk
	rerr    error
	readDL  *deadline
	wmu     sync.Mutex // gorilla allows one writer at a time
	read    *atomic.Int64
	written *atomic.Int64
}

type chunk struct {
	buf *[]byte
	b   []byte // unread part of *buf
	err error  // set on the last chunk
}

func newConn(ws *websocket.Conn, bufs *buffers, read, written *atomic.Int64) *conn {
	if read == nil {
		read, written = new(atomic.Int64), new(atomic.Int64)
	}
	return &conn{
		ws:      ws,
		bufs:    bufs,
		chunks:  make(chan chunk, chunksQueued),
		closed:  make(chan struct{}),
		readDL:  newDeadline(),
		read:    read,
		written: written,
	}
}

// readLoop runs for the conn's lifetime; Close unblocks it by closing the
// websocket.
func (c *conn) readLoop() {
	defer close(c.chunks)
	for {
		typ, r, err := c.ws.NextReader()
		if err != nil {
			c.send(chunk{err: mapReadErr(err)})
			return
		}
		if typ != websocket.BinaryMessage {
			continue // activations and future control frames carry no payload
		}
		for {
			bp := c.bufs.get()
			// Fill the chunk from this message: its bytes are already in
			// flight, so this never waits on the peer's application, and
			// it halves the hand-offs for 16 KiB TLS records.
			n, err := io.ReadFull(r, *bp)
			if err == io.ErrUnexpectedEOF {
				err = io.EOF
			}
			if n > 0 && !c.send(chunk{buf: bp, b: (*bp)[:n]}) {
				return
			}
			if n == 0 {
				c.bufs.put(bp)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				c.send(chunk{err: mapReadErr(err)})
				return
			}
		}
	}
}

func (c *conn) send(ch chunk) bool {
	select {
	case c.chunks <- ch:
		return true
	case <-c.closed:
		if ch.buf != nil {
			c.bufs.put(ch.buf)
		}
		return false
	}
}

// mapReadErr turns a clean websocket close into io.EOF, as net.Conn users
// expect.
func mapReadErr(err error) error {
	var ce *websocket.CloseError
	if errors.As(err, &ce) && (ce.Code == websocket.CloseNormalClosure || ce.Code == websocket.CloseGoingAway) {
		return io.EOF
	}
	return err
}

func (c *conn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.cur.b == nil {
		if c.rerr != nil {
			return 0, c.rerr
		}
		c.startReader.Do(func() { go c.readLoop() })
		select {
		case ch, ok := <-c.chunks:
			if !ok {
				c.rerr = net.ErrClosed
				return 0, c.rerr
			}
			if ch.err != nil {
				c.rerr = ch.err
				return 0, ch.err
			}
			c.cur = ch
		case <-c.closed:
			return 0, net.ErrClosed
		case <-c.readDL.wait():
			return 0, deadlineErr{}
		}
	}
	n := copy(p, c.cur.b)
	c.cur.b = c.cur.b[n:]
	if len(c.cur.b) == 0 {
		// Return the chunk now rather than on the next Read, which may
		// never come.
		c.bufs.put(c.cur.buf)
		c.cur = chunk{}
	}
	c.read.Add(int64(n))
	return n, nil
}

func (c *conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	if err := c.ws.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	c.written.Add(int64(len(p)))
	return len(p), nil
}

// Close sends a close frame, so the peer's Read sees io.EOF rather than a
// reset, and then closes the socket. It is safe to call more than once.
func (c *conn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
		_ = c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
		err = c.ws.Close()
		c.readDL.stop()
	})
	return err
}

func (c *conn) LocalAddr() net.Addr  { return c.ws.LocalAddr() }
func (c *conn) RemoteAddr() net.Addr { return c.ws.RemoteAddr() }

func (c *conn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *conn) SetReadDeadline(t time.Time) error {
	c.readDL.set(t)
	return nil
}

// SetWriteDeadline applies to future writes through gorilla and also to the
// socket, so a write already blocked on a stalled peer is interrupted.
func (c *conn) SetWriteDeadline(t time.Time) error {
	if err := c.ws.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.ws.NetConn().SetWriteDeadline(t)
}
