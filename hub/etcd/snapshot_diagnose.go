package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// ErrClientCertificateRequired is in the chain of a member's cause when
// the member asks for a TLS client certificate and the client has none.
var ErrClientCertificateRequired = errors.New("the member requires a TLS client certificate and none was given")

// postHandshakeWait is how long diagnose waits, after a TLS handshake
// that passed, for the server to reject the client's certificate: with
// TLS 1.3 the server says so only after the handshake, with an alert.
const postHandshakeWait = 2 * time.Second

// diagnose finds why the member at endpoint failed a check, which the etcd
// client reports only as the deadline that ran out while it retried:
// it connects once itself, as the client would, and returns the first
// error on the way (the refused connection, the certificate that does not
// verify, the server's TLS alert). nil means the connection and TLS are
// fine, so the cause lies beyond them.
func diagnose(ctx context.Context, endpoint string, tlsCfg *tls.Config) error {
	network, addr, secure, err := parseEndpoint(endpoint)
	if err != nil {
		return err
	}
	if secure && tlsCfg == nil {
		// As the etcd client: https without TLS flags trusts the system roots.
		tlsCfg = &tls.Config{}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if !secure {
		return nil
	}
	cfg := tlsCfg.Clone()
	if cfg.ServerName == "" && network == "tcp" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	// The member's gRPC listener speaks HTTP/2.
	cfg.NextProtos = []string{"h2"}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return clientCertHint(err, cfg)
	}
	// A server that accepts the client sends its HTTP/2 settings; one that
	// does not, an alert. Silence until the deadline also means accepted.
	_ = tc.SetReadDeadline(time.Now().Add(postHandshakeWait))
	var b [1]byte
	if _, err := tc.Read(b[:]); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		return clientCertHint(err, cfg)
	}
	return nil
}

// clientCertHint adds ErrClientCertificateRequired to a TLS error the
// server sent because no client certificate came.
func clientCertHint(err error, cfg *tls.Config) error {
	none := len(cfg.Certificates) == 0 && cfg.GetClientCertificate == nil
	msg := err.Error()
	if none && (strings.Contains(msg, "certificate required") || strings.Contains(msg, "bad certificate")) {
		return fmt.Errorf("%w: %w", ErrClientCertificateRequired, err)
	}
	return err
}

// parseEndpoint splits an etcd endpoint as the etcd client reads them:
// http(s)://host:port, unix(s)://path, or a bare host:port (insecure).
func parseEndpoint(endpoint string) (network, addr string, secure bool, err error) {
	if !strings.Contains(endpoint, "://") {
		return "tcp", endpoint, false, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", "", false, fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	switch u.Scheme {
	case "http", "https":
		return "tcp", u.Host, u.Scheme == "https", nil
	case "unix", "unixs":
		return "unix", u.Host + u.Path, u.Scheme == "unixs", nil
	default:
		return "", "", false, fmt.Errorf("endpoint %q: unknown scheme %q", endpoint, u.Scheme)
	}
}
