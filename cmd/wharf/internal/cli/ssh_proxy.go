package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/spf13/cobra"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	edgesv1 "github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
)

func newSSHProxyCommand() *cobra.Command {
	f := &hubFlags{}
	cmd := &cobra.Command{
		Use:   "ssh-proxy <edge>",
		Short: "Carry stdin/stdout to a server edge's sshd through the hub (an ssh ProxyCommand)",
		Long: `ssh-proxy opens the edge's SSH tunnel (its status.URL, a websocket on the hub)
with your credential from the kubeconfig and copies stdin to it and it to
stdout, so ssh runs end to end over it. Use it in ~/.ssh/config:

  Host web-1
    ProxyCommand wharf ssh-proxy %h
    HostKeyAlias <see "wharf ssh-config web-1">

"wharf ssh" and "wharf ssh-config" set it up with the host key pinned.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.connect()
			if err != nil {
				return err
			}
			e, err := getServerEdge(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			conn, err := dialEdgeSSH(cmd.Context(), c, e)
			if err != nil {
				return err
			}
			return pipeWebsocket(cmd.Context(), conn, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	f.add(cmd.Flags())
	return cmd
}

// getServerEdge fetches a server edge that has connected at least once.
func getServerEdge(ctx context.Context, c *hubConn, name string) (*edgesv1.Edge, error) {
	e, err := getEdge(ctx, c, name)
	if err != nil {
		return nil, err
	}
	if e.Spec.Type != edgesv1.TypeServer {
		return nil, fmt.Errorf("edge %q is a %s edge, not a server; use \"wharf kubeconfig edge %s\"", e.Name, e.Spec.Type, e.Name)
	}
	return e, nil
}

// dialEdgeSSH opens the websocket at the edge's status.URL as the caller.
// The request goes through the rest config's transport wrappers, so a
// bearer token, an exec plugin (with its refresh) and client certificates
// all authenticate it as they would a kubectl request.
func dialEdgeSSH(ctx context.Context, c *hubConn, e *edgesv1.Edge) (*websocket.Conn, error) {
	cluster, err := edgeCluster(e)
	if err != nil {
		return nil, err
	}
	target, err := edgeURL(c, e)
	if err != nil {
		return nil, err
	}
	rc, err := c.rootConfig()
	if err != nil {
		return nil, err
	}
	rt, d, err := websocketRoundTripper(rc)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Wharf-Workspace", cluster)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, fromServer(err)
	}
	resp.Body.Close()
	return d.conn, nil
}

// websocketRoundTripper wraps a websocket dialer in the config's auth
// wrappers; after RoundTrip the dialer holds the connection.
func websocketRoundTripper(rc *rest.Config) (http.RoundTripper, *wsDialer, error) {
	tc, err := rc.TransportConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("hub transport: %w", err)
	}
	tlsCfg, err := transport.TLSConfigFor(tc)
	if err != nil {
		return nil, nil, fmt.Errorf("hub TLS: %w", err)
	}
	proxy := rc.Proxy
	if proxy == nil {
		proxy = utilnet.NewProxierWithNoProxyCIDR(http.ProxyFromEnvironment)
	}
	d := &wsDialer{tls: tlsCfg, proxy: proxy}
	rt, err := transport.HTTPWrappersForConfig(tc, d)
	if err != nil {
		return nil, nil, fmt.Errorf("hub transport: %w", err)
	}
	return rt, d, nil
}

// wsDialer is the innermost round tripper: it performs the websocket
// handshake with the headers the wrappers set. Unlike client-go's
// websocket round tripper it needs no subprotocol: the tunnel is raw bytes.
type wsDialer struct {
	tls   *tls.Config
	proxy func(*http.Request) (*url.URL, error)
	conn  *websocket.Conn
}

func (d *wsDialer) RoundTrip(req *http.Request) (*http.Response, error) {
	u := *req.URL
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	case "wss":
	default:
		return nil, fmt.Errorf("edge tunnel URL %q must be https", req.URL.Redacted())
	}
	dialer := websocket.Dialer{TLSClientConfig: d.tls, Proxy: d.proxy, HandshakeTimeout: 30 * time.Second}
	conn, resp, err := dialer.DialContext(req.Context(), u.String(), req.Header)
	if err != nil {
		if resp != nil && errors.Is(err, websocket.ErrBadHandshake) {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			return nil, statusFromResponse(resp.StatusCode, body)
		}
		return nil, fmt.Errorf("opening the edge tunnel: %w", err)
	}
	d.conn = conn
	return resp, nil
}

// pipeWebsocket copies in to binary frames and frames to out until either
// side ends: stdin's EOF (ssh closed the connection) sends a close frame,
// the remote's close (or any error) ends the copy. ctx ends both.
func pipeWebsocket(ctx context.Context, conn *websocket.Conn, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var once sync.Once
	closeConn := func() { once.Do(func() { conn.Close() }) }
	go func() {
		<-ctx.Done()
		closeConn()
	}()
	upErr := make(chan error, 1)
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := in.Read(buf)
			if n > 0 {
				if werr := conn.WriteMessage(websocket.BinaryMessage, buf[:n]); werr != nil {
					upErr <- werr
					return
				}
			}
			if errors.Is(err, io.EOF) {
				msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
				_ = conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(5*time.Second))
				upErr <- nil
				return
			}
			if err != nil {
				upErr <- err
				return
			}
		}
	}()
	downErr := make(chan error, 1)
	go func() {
		for {
			_, r, err := conn.NextReader()
			if err != nil {
				if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway) {
					err = nil
				}
				downErr <- err
				return
			}
			if _, err := io.Copy(out, r); err != nil {
				downErr <- err
				return
			}
		}
	}()
	select {
	case err := <-downErr:
		// The remote side ended: sshd closed, or the tunnel dropped.
		closeConn()
		return quietClose(ctx, err)
	case err := <-upErr:
		if err != nil {
			closeConn()
			return quietClose(ctx, err)
		}
		// Our side ended; give the remote a moment to answer the close.
		select {
		case <-downErr:
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
		}
		closeConn()
		return nil
	}
}

// quietClose drops errors after ctx ended (Ctrl-C closes the conn itself).
func quietClose(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("edge tunnel: %w", err)
}
