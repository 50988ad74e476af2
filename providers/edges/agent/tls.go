package agent

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"time"
)

// tlsConfig is the agent's TLS to the hub: the bundle's CA is the only root
// (a public CA, or the machine's trust store, can never vouch for the hub),
// TLS 1.2 or later, and no way to skip verification.
type tlsConfig struct{ cfg *tls.Config }

func pinnedTLS(caPEM string) (*tlsConfig, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(caPEM)) {
		return nil, errors.New("join bundle: the hub CA is not a PEM certificate")
	}
	return &tlsConfig{cfg: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}, nil
}

// clone returns a copy for a new user (revdial adds a session cache).
func (t *tlsConfig) clone() *tls.Config { return t.cfg.Clone() }

// transport is an HTTP transport that trusts only the pinned CA. It does
// not use the environment's proxy settings differently from revdial: both
// honour HTTPS_PROXY, as agents behind corporate proxies need.
func (t *tlsConfig) transport() *http.Transport {
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     t.clone(),
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
		IdleConnTimeout:     30 * time.Second,
	}
}
