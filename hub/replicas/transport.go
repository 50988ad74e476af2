package replicas

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Peer is a live replica to forward to, with the pooled transport that
// reaches it.
type Peer struct {
	Replica
	URL       *url.URL
	Transport http.RoundTripper
}

// Peers hands out one pooled TLS transport per peer replica, verifying the
// peer's certificate against the CA bundle it registered. A transport is
// replaced (and its idle connections closed) when the peer's URL or CA
// changes.
type Peers struct {
	registry *Registry

	mu    sync.Mutex
	peers map[string]*peerTransport
}

type peerTransport struct {
	key string // URL + CA digest the transport was built for
	url *url.URL
	tr  *http.Transport
}

// NewPeers returns the transports to the replicas in registry.
func NewPeers(registry *Registry) *Peers {
	return &Peers{registry: registry, peers: map[string]*peerTransport{}}
}

// Get returns the named live replica and its transport.
func (p *Peers) Get(ctx context.Context, name string) (Peer, error) {
	rep, err := p.registry.Lookup(ctx, name)
	if err != nil {
		return Peer{}, err
	}
	digest := sha256.Sum256(rep.CABundle)
	key := rep.InternalURL + "\x00" + string(digest[:])
	p.mu.Lock()
	defer p.mu.Unlock()
	if pt, ok := p.peers[name]; ok && pt.key == key {
		return Peer{Replica: rep, URL: pt.url, Transport: pt.tr}, nil
	}
	u, err := url.Parse(rep.InternalURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return Peer{}, fmt.Errorf("replica %q registered internal URL %q: not an https URL", name, rep.InternalURL)
	}
	// No bundle means the replica's certificate chains to a public root
	// (an operator-provided certificate): verify against the system roots.
	var pool *x509.CertPool
	if len(rep.CABundle) > 0 {
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(rep.CABundle) {
			return Peer{}, errors.New("replica " + name + " registered an unusable CA bundle")
		}
	}
	tr := &http.Transport{
		Proxy: nil, // replicas talk directly
		// A holder that vanished without resetting its connections must
		// turn into a 503 in seconds, not after the kernel's minutes.
		DialContext:         (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 10 * time.Second}).DialContext,
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:   false, // HTTP/1.1 carries websocket upgrades
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	if old, ok := p.peers[name]; ok {
		old.tr.CloseIdleConnections()
	}
	p.peers[name] = &peerTransport{key: key, url: u, tr: tr}
	return Peer{Replica: rep, URL: u, Transport: tr}, nil
}
