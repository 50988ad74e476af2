package revdial

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// ClientConfig configures a reconnecting agent.
type ClientConfig struct {
	// URL is the control websocket, ws:// or wss://. Pickup paths are
	// resolved against it.
	URL string
	// Header returns the headers for each control and pickup handshake.
	// It is called every time, so rotated tokens are picked up. May be nil.
	Header func(ctx context.Context) (http.Header, error)
	// ControlHeader, if set, replaces Header for control handshakes only,
	// so an agent can send its credential and costly facts (a scanned
	// host key) on the control channel and keep pickups, which their
	// token authorizes, bare.
	ControlHeader func(ctx context.Context) (http.Header, error)
	// TLSConfig for wss://. A session cache is added if it has none, so
	// pickups resume TLS sessions instead of full handshakes.
	TLSConfig *tls.Config
	Options   Options
	Backoff   Backoff
	// OnState, if set, is called after every connect (err nil) and every
	// disconnect or failed attempt (err set). It must not block.
	OnState func(connected bool, err error)
	// OnConnect, if set, sees the response (101) of every successful
	// control handshake before the tunnel serves any connection, so an
	// embedding application can act on response headers first (the edges
	// agent saves a rotated credential there). An error closes that
	// control channel and counts as a failed attempt.
	OnConnect func(resp *http.Response) error
	// RetryDelay, if set, chooses the wait before the next attempt from the
	// error that ended the last one (a *HandshakeError when the server
	// answered the control handshake with another status), overriding
	// Backoff for that attempt when ok is true. The agent uses it to slow
	// down to the maximum once the server refuses its credential.
	RetryDelay func(err error, attempt int) (d time.Duration, ok bool)
}

// HandshakeError is returned (wrapped) when the server answered a websocket
// handshake with a status other than 101, so callers can tell a refused
// credential (401, 403) from a network failure with errors.As.
type HandshakeError struct {
	Path       string
	StatusCode int
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("revdial: %s: %v (HTTP %d)", e.Path, websocket.ErrBadHandshake, e.StatusCode)
}

// Unwrap keeps errors.Is(err, websocket.ErrBadHandshake) true.
func (e *HandshakeError) Unwrap() error { return websocket.ErrBadHandshake }

// Client is an agent that keeps a control channel to the server open,
// reconnecting with backoff, and is itself the net.Listener of every
// connection the server dials through it.
type Client struct {
	cfg     ClientConfig
	url     *url.URL
	control *websocket.Dialer
	pickups *websocket.Dialer
	out     chan net.Conn

	closeOnce sync.Once
	closed    chan struct{}
	mu        sync.Mutex
	cancelRun context.CancelFunc
}

// NewClient validates cfg. Call Run to connect.
func NewClient(cfg ClientConfig) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("revdial: control URL: %w", err)
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return nil, fmt.Errorf("revdial: control URL %q: scheme must be ws or wss", cfg.URL)
	}
	cfg.Options = cfg.Options.withDefaults()
	cfg.Backoff = cfg.Backoff.withDefaults()
	tc := cfg.TLSConfig.Clone()
	if tc == nil {
		tc = &tls.Config{}
	}
	if tc.ClientSessionCache == nil {
		tc.ClientSessionCache = tls.NewLRUClientSessionCache(64)
	}
	// Websockets need HTTP/1.1; a config shared with an http.Transport
	// may offer h2, which the server could pick and break the upgrade.
	tc.NextProtos = []string{"http/1.1"}
	pool := new(sync.Pool) // shared by this client's pickups only
	mk := func(rbuf, wbuf int) *websocket.Dialer {
		return &websocket.Dialer{
			WriteBufferPool:  pool,
			Proxy:            http.ProxyFromEnvironment,
			TLSClientConfig:  tc,
			HandshakeTimeout: cfg.Options.HandshakeTimeout,
			ReadBufferSize:   rbuf,
			WriteBufferSize:  wbuf,
		}
	}
	return &Client{
		cfg: cfg, url: u,
		// Pickups read through a small buffer (large frames bypass it)
		// and write through a large pooled one (one frame per Write).
		control: mk(1024, 1024), pickups: mk(4096, chunkSize),
		out:    make(chan net.Conn),
		closed: make(chan struct{}),
	}, nil
}

// Accept returns the next connection the server dialed, from whichever
// control channel is current.
func (c *Client) Accept() (net.Conn, error) {
	select {
	case conn := <-c.out:
		return conn, nil
	case <-c.closed:
		return nil, net.ErrClosed
	}
}

// Close stops Run and fails Accept. It is safe to call more than once.
func (c *Client) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	c.mu.Lock()
	if c.cancelRun != nil {
		c.cancelRun()
	}
	c.mu.Unlock()
	return nil
}

// Addr names the listener after the control URL.
func (c *Client) Addr() net.Addr { return addr(c.url.String()) }

// Run connects and keeps reconnecting until ctx is done or Close is called;
// it then closes the client and returns. Every goroutine it starts has ended
// by the time it returns.
func (c *Client) Run(ctx context.Context) error {
	defer c.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Close cancels this run; no goroutine is needed to watch for it.
	c.mu.Lock()
	c.cancelRun = cancel
	c.mu.Unlock()
	select {
	case <-c.closed:
		return nil
	default:
	}
	attempt := 0
	for {
		connectedFor, err := c.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if connectedFor >= c.cfg.Backoff.StableAfter {
			attempt = 0
		}
		if c.cfg.OnState != nil {
			c.cfg.OnState(false, err)
		}
		delay := c.cfg.Backoff.Delay(attempt)
		if c.cfg.RetryDelay != nil {
			if d, ok := c.cfg.RetryDelay(err, attempt); ok {
				delay = d
			}
		}
		t := time.NewTimer(delay)
		attempt++
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// session dials the control channel once and serves it until it dies. It
// returns how long it was connected (zero if the dial failed).
func (c *Client) session(ctx context.Context) (time.Duration, error) {
	header := c.cfg.Header
	if c.cfg.ControlHeader != nil {
		header = c.cfg.ControlHeader
	}
	ws, resp, err := c.dialResp(ctx, c.control, c.url, header)
	if err != nil {
		return 0, fmt.Errorf("revdial: control dial: %w", err)
	}
	if c.cfg.OnConnect != nil {
		if err := c.cfg.OnConnect(resp); err != nil {
			ws.Close()
			return 0, fmt.Errorf("revdial: control connect hook: %w", err)
		}
	}
	start := time.Now()
	l := newListener(ws, c.openPickup, c.cfg.Options, c.out)
	if c.cfg.OnState != nil {
		c.cfg.OnState(true, nil)
	}
	select {
	case <-l.Done():
	case <-ctx.Done():
	}
	err = l.Err()
	l.Close()
	return time.Since(start), err
}

func (c *Client) openPickup(ctx context.Context, connPath string) (*websocket.Conn, error) {
	ref, err := url.Parse(connPath)
	if err != nil {
		return nil, fmt.Errorf("revdial: bad connPath %q: %w", connPath, err)
	}
	// The pickup carries this agent's credentials (Header), so it may only
	// go back to the host the control channel came from.
	if ref.Scheme != "" || ref.Host != "" || !strings.HasPrefix(ref.Path, "/") {
		return nil, fmt.Errorf("revdial: connPath %q is not an absolute path on the control host", connPath)
	}
	return c.dial(ctx, c.pickups, c.url.ResolveReference(ref))
}

func (c *Client) dial(ctx context.Context, d *websocket.Dialer, u *url.URL) (*websocket.Conn, error) {
	ws, _, err := c.dialResp(ctx, d, u, c.cfg.Header)
	return ws, err
}

// dialResp is dial that also returns the handshake's response.
func (c *Client) dialResp(ctx context.Context, d *websocket.Dialer, u *url.URL, header func(context.Context) (http.Header, error)) (*websocket.Conn, *http.Response, error) {
	var h http.Header
	if header != nil {
		var err error
		if h, err = header(ctx); err != nil {
			return nil, nil, fmt.Errorf("revdial: headers: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Options.HandshakeTimeout)
	defer cancel()
	ws, resp, err := d.DialContext(ctx, u.String(), h)
	if err != nil {
		if resp != nil && errors.Is(err, websocket.ErrBadHandshake) {
			resp.Body.Close()
			return nil, nil, &HandshakeError{Path: u.Path, StatusCode: resp.StatusCode}
		}
		return nil, nil, fmt.Errorf("revdial: %s: %w", u.Path, err)
	}
	return ws, resp, nil
}
