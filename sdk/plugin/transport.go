package plugin

import (
	"context"
	"net"
	"net/http"
	"time"
)

// NewSocketTransport returns a pooled HTTP transport whose every connection
// dials the plugin's unix socket, whatever the request URL's host says. The
// hub's proxies use it with any placeholder host, e.g. http://provider/.
// Compression is left to the client and provider so streams pass through.
func NewSocketTransport(socketPath string) *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socketPath)
		},
		MaxIdleConns:        100,
		MaxIdleConnsPerHost: 100,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
}

// Transport is NewSocketTransport for this client's socket.
func (c *Client) Transport() *http.Transport { return NewSocketTransport(c.socketPath) }
