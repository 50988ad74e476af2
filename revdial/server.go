package revdial

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/gorilla/websocket"
)

// ErrServerClosed is returned by NewDialer after Server.Close.
var ErrServerClosed = errors.New("revdial: server closed")

// Server owns the dialers of one process and the pickup tokens they have
// handed out. It is the http.Handler that agents' pickups arrive at; mount it
// at the prefix given to NewServer.
type Server struct {
	opts     Options
	prefix   string
	upgrader websocket.Upgrader
	stats    counters
	bufs     *buffers

	// mintHook, when set by a test, sees every token with its Dial's
	// context, so a test can prove which dial a pickup completed.
	mintHook func(ctx context.Context, token string)
	// afterTake, when set by a test, runs between spending a token and
	// upgrading, to stage the race with a cancelled dial.
	afterTake func()

	mu      sync.Mutex
	closed  bool
	dialers map[string]*Dialer
	pending map[string]*pending
}

// pending is one outstanding pickup token. Whoever removes it from
// Server.pending owns it: the pickup handler delivers exactly one result on
// ch, or the dialer withdraws it and nothing is ever delivered.
type pending struct {
	dialer *Dialer
	ch     chan pickupResult // buffered(1): deliver never blocks
}

type pickupResult struct {
	conn *conn
	err  error
}

// NewServer returns a Server whose pickups are reached at pickupPrefix
// followed by "/<token>", as seen by the agent.
func NewServer(pickupPrefix string, opts Options) *Server {
	opts = opts.withDefaults()
	return &Server{
		opts:   opts,
		prefix: pickupPrefix,
		upgrader: websocket.Upgrader{
			HandshakeTimeout: opts.HandshakeTimeout,
			// Zero reuses the HTTP server's 4 KiB reader: large frames
			// bypass it and land straight in conn's chunks anyway.
			ReadBufferSize:  0,
			WriteBufferSize: chunkSize,
			// Pooled write buffers: an open but quiet connection then
			// holds no write buffer.
			WriteBufferPool: new(sync.Pool),
			// Pickups are authorized by their token, not by ambient
			// credentials, so the browser same-origin check does not apply.
			CheckOrigin: func(*http.Request) bool { return true },
		},
		dialers: make(map[string]*Dialer),
		pending: make(map[string]*pending),
		bufs:    newBuffers(),
	}
}

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() Stats { return s.stats.snapshot() }

// Dialer returns the live dialer registered under id.
func (s *Server) Dialer(id string) (*Dialer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.dialers[id]
	return d, ok
}

// ServeHTTP completes a pickup: it spends the token in the path and hands
// the upgraded websocket to the Dial that minted it. Unknown, spent and
// withdrawn tokens get 404 before any upgrade.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Refuse a request that cannot become a websocket before spending its
	// token: a stray GET must not cost the agent its pickup.
	if !websocket.IsWebSocketUpgrade(r) {
		http.Error(w, "revdial: pickups are websocket upgrades", http.StatusBadRequest)
		return
	}
	p := s.take(tokenFromPath(r.URL.Path), nil)
	if p == nil {
		s.stats.pickupRefused.Add(1)
		http.Error(w, "revdial: unknown or expired pickup token", http.StatusNotFound)
		return
	}
	if s.afterTake != nil {
		s.afterTake()
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		// Upgrade has already answered the request.
		p.ch <- pickupResult{err: fmt.Errorf("revdial: pickup upgrade: %w", err)}
		return
	}
	p.ch <- pickupResult{conn: newConn(ws, s.bufs, &s.stats.bytesRead, &s.stats.bytesWritten)}
}

// mint registers a new token for d.
func (s *Server) mint(d *Dialer) (string, *pending) {
	p := &pending{dialer: d, ch: make(chan pickupResult, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		t := newToken()
		if _, dup := s.pending[t]; !dup {
			s.pending[t] = p
			return t, p
		}
	}
}

// take removes and returns the pending entry for token. If owner is not nil,
// only an entry of that dialer is taken, so an agent can only touch its own
// dials.
func (s *Server) take(token string, owner *Dialer) *pending {
	if token == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending[token]
	if p == nil || (owner != nil && p.dialer != owner) {
		return nil
	}
	delete(s.pending, token)
	return p
}

// register adds d under id, replacing (and closing) a previous dialer with
// that id: a reconnecting agent is usually seen before its old tunnel's
// read deadline expires.
func (s *Server) register(d *Dialer) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	old := s.dialers[d.id]
	s.dialers[d.id] = d
	s.mu.Unlock()
	s.stats.liveTunnels.Add(1)
	s.stats.tunnels.Add(1)
	if old != nil {
		old.shutdown(errReplaced)
	}
	return nil
}

func (s *Server) unregister(d *Dialer) {
	s.mu.Lock()
	if s.dialers[d.id] == d {
		delete(s.dialers, d.id)
	}
	s.mu.Unlock()
	s.stats.liveTunnels.Add(-1)
}

// Close closes every dialer and refuses new ones. Connections already
// returned by Dial stay open. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	ds := make([]*Dialer, 0, len(s.dialers))
	for _, d := range s.dialers {
		ds = append(ds, d)
	}
	s.mu.Unlock()
	for _, d := range ds {
		d.Close()
	}
	return nil
}

// Upgrade accepts a control websocket with buffers sized for control
// messages (an idle tunnel should cost little memory) and adopts it as the
// dialer for id.
func (s *Server) Upgrade(w http.ResponseWriter, r *http.Request, id string) (*Dialer, error) {
	return s.UpgradeWithHeader(w, r, id, nil)
}

// UpgradeWithHeader is Upgrade with extra headers on the 101 answer (the
// edges provider hands a rotated agent credential there; the agent sees it
// through ClientConfig.OnConnect). Headers set on w are not sent: the
// websocket library writes the 101 itself.
func (s *Server) UpgradeWithHeader(w http.ResponseWriter, r *http.Request, id string, header http.Header) (*Dialer, error) {
	u := websocket.Upgrader{
		HandshakeTimeout: s.opts.HandshakeTimeout,
		ReadBufferSize:   1024,
		WriteBufferSize:  1024,
		CheckOrigin:      func(*http.Request) bool { return true },
	}
	ws, err := u.Upgrade(w, r, header)
	if err != nil {
		return nil, fmt.Errorf("revdial: control upgrade: %w", err)
	}
	d, err := s.NewDialer(id, ws)
	if err != nil {
		ws.Close()
		return nil, err
	}
	return d, nil
}

// addr is the net.Addr of the virtual listener on the agent side.
type addr string

func (a addr) Network() string { return "revdial" }
func (a addr) String() string  { return string(a) }

var _ net.Addr = addr("")
