package revdialbench

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rancher/remotedialer"
	xrevdial "golang.org/x/build/revdial/v2"

	"github.com/wharfhub/wharf/revdial"
)

// hubSide is the server half of one system under test, running in the
// benchmark process.
type hubSide struct {
	addr      string
	serverTLS *tls.Config
	cliTLS    *tls.Config
	dial      func(ctx context.Context, id string) (net.Conn, error)
	tunnels   func() int
	close     func()
	// stats, if set, describes the hub's own counters (warm-pool hits).
	stats func() string
}

// system is one tunnel implementation.
type system struct {
	name string
	// startHub serves the hub half on a loopback TLS listener.
	startHub func(tb testing.TB) *hubSide
	// startAgent connects one agent with the given id and serves the
	// application on every connection it receives, until ctx is done.
	startAgent func(ctx context.Context, addr string, cli *tls.Config, id string)
}

func systems() []system {
	return []system{
		{"wharf", wharfHub(0), wharfAgent},
		{"wharf-warm", wharfHub(8), wharfAgent},
		{"x/build-v2", xbuildHub, xbuildAgent},
		{"remotedialer", rancherHub, rancherAgent},
		{"raw-tls", rawHub, rawAgent},
	}
}

// serveTLS starts an HTTP server over TLS on loopback.
func serveTLS(tb testing.TB, h http.Handler) (string, *tls.Config, *tls.Config, func()) {
	tb.Helper()
	srvTLS, cliTLS := tlsPair(tb)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srvTLS)
	if err != nil {
		tb.Fatal(err)
	}
	hs := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = hs.Serve(ln) }()
	return ln.Addr().String(), srvTLS, cliTLS, func() { hs.Close() }
}

// --- wharf -----------------------------------------------------------------

func wharfHub(warm int) func(testing.TB) *hubSide {
	return func(tb testing.TB) *hubSide {
		srv := revdial.NewServer("/pickup", revdial.Options{WarmPickups: warm})
		mux := http.NewServeMux()
		mux.HandleFunc("/control", func(w http.ResponseWriter, r *http.Request) {
			_, _ = srv.Upgrade(w, r, r.URL.Query().Get("id"))
		})
		mux.Handle("/pickup/", srv)
		addr, srvTLS, cli, stop := serveTLS(tb, mux)
		return &hubSide{
			addr: addr, serverTLS: srvTLS, cliTLS: cli,
			dial: func(ctx context.Context, id string) (net.Conn, error) {
				d, ok := srv.Dialer(id)
				if !ok {
					return nil, fmt.Errorf("no tunnel %q", id)
				}
				return d.Dial(ctx)
			},
			tunnels: func() int { return int(srv.Stats().LiveTunnels) },
			close:   func() { srv.Close(); stop() },
			stats: func() string {
				st := srv.Stats()
				return fmt.Sprintf("dials %d, warm hits %d, misses %d", st.Dials, st.WarmHits, st.WarmMisses)
			},
		}
	}
}

func wharfAgent(ctx context.Context, addr string, cli *tls.Config, id string) {
	cl, err := revdial.NewClient(revdial.ClientConfig{URL: "wss://" + addr + "/control?id=" + id, TLSConfig: cli})
	if err != nil {
		panic(err)
	}
	go func() { _ = cl.Run(ctx) }()
	go acceptLoop(cl)
}

// --- golang.org/x/build/revdial/v2 ----------------------------------------

func xbuildHub(tb testing.TB) *hubSide {
	var mu sync.Mutex
	dialers := map[string]*xrevdial.Dialer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/control", func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		_, _ = conn.Write([]byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: revdial\r\nConnection: Upgrade\r\n\r\n"))
		d := xrevdial.NewDialer(conn, "/revdial")
		id := r.URL.Query().Get("id")
		mu.Lock()
		dialers[id] = d
		mu.Unlock()
		go func() {
			<-d.Done()
			mu.Lock()
			if dialers[id] == d {
				delete(dialers, id)
			}
			mu.Unlock()
		}()
	})
	mux.Handle("/revdial", xrevdial.ConnHandler())
	addr, srvTLS, cli, stop := serveTLS(tb, mux)
	return &hubSide{
		addr: addr, serverTLS: srvTLS, cliTLS: cli,
		dial: func(ctx context.Context, id string) (net.Conn, error) {
			mu.Lock()
			d := dialers[id]
			mu.Unlock()
			if d == nil {
				return nil, fmt.Errorf("no tunnel %q", id)
			}
			return d.Dial(ctx)
		},
		tunnels: func() int { mu.Lock(); defer mu.Unlock(); return len(dialers) },
		close: func() {
			mu.Lock()
			for _, d := range dialers {
				d.Close()
			}
			mu.Unlock()
			stop()
		},
	}
}

// bufConn reads through the bufio.Reader that parsed the 101 response, so
// control bytes that arrived with it are not lost.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func xbuildAgent(ctx context.Context, addr string, cli *tls.Config, id string) {
	td := &tls.Dialer{Config: cli}
	c, err := td.DialContext(ctx, "tcp", addr)
	if err != nil {
		return
	}
	fmt.Fprintf(c, "GET /control?id=%s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: revdial\r\n\r\n", id, addr)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		c.Close()
		return
	}
	ln := xrevdial.NewListener(bufConn{c, br}, func(ctx context.Context) (net.Conn, error) {
		return td.DialContext(ctx, "tcp", addr)
	})
	go acceptLoop(ln)
	context.AfterFunc(ctx, func() { ln.Close() })
}

// --- rancher/remotedialer --------------------------------------------------

func rancherHub(tb testing.TB) *hubSide {
	rd := remotedialer.New(func(r *http.Request) (string, bool, error) {
		return r.URL.Query().Get("id"), true, nil
	}, remotedialer.DefaultErrorWriter)
	mux := http.NewServeMux()
	mux.Handle("/connect", rd)
	addr, srvTLS, cli, stop := serveTLS(tb, mux)
	// remotedialer's agent reaches services by address: give it a local
	// one serving the same application.
	app, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go acceptLoop(app)
	return &hubSide{
		addr: addr, serverTLS: srvTLS, cliTLS: cli,
		dial: func(ctx context.Context, id string) (net.Conn, error) {
			return rd.Dialer(id)(ctx, "tcp", app.Addr().String())
		},
		tunnels: func() int { return len(rd.ListClients()) },
		close:   func() { app.Close(); stop() },
	}
}

func rancherAgent(ctx context.Context, addr string, cli *tls.Config, id string) {
	wd := &websocket.Dialer{TLSClientConfig: cli, HandshakeTimeout: 10 * time.Second}
	go func() {
		for ctx.Err() == nil {
			_ = remotedialer.ConnectToProxy(ctx, "wss://"+addr+"/connect?id="+id, nil,
				func(string, string) bool { return true }, wd, nil)
			time.Sleep(100 * time.Millisecond)
		}
	}()
}

// --- raw TLS ---------------------------------------------------------------

// rawHub is the baseline: the "tunnel" is a TLS connection, dialed to a
// listener that serves the application directly. Idle agents are TLS
// connections parked in the application's first read.
func rawHub(tb testing.TB) *hubSide {
	srvTLS, cliTLS := tlsPair(tb)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srvTLS)
	if err != nil {
		tb.Fatal(err)
	}
	var open atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			open.Add(1)
			go func() {
				defer open.Add(-1)
				// Finish the handshake here so an idle conn is a
				// complete TLS session, as it is for the tunnels.
				if tc, ok := c.(*tls.Conn); ok && tc.Handshake() != nil {
					c.Close()
					return
				}
				serveApp(c)
			}()
		}
	}()
	td := &tls.Dialer{Config: cliTLS}
	return &hubSide{
		addr: ln.Addr().String(), serverTLS: srvTLS, cliTLS: cliTLS,
		dial: func(ctx context.Context, _ string) (net.Conn, error) {
			return td.DialContext(ctx, "tcp", ln.Addr().String())
		},
		tunnels: func() int { return int(open.Load()) },
		close:   func() { ln.Close() },
	}
}

func rawAgent(ctx context.Context, addr string, cli *tls.Config, _ string) {
	c, err := (&tls.Dialer{Config: cli}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return
	}
	context.AfterFunc(ctx, func() { c.Close() })
}
