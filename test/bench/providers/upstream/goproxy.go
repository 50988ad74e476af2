package upstream

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
)

// ServeGoProxy serves a bare httputil.ReverseProxy over TLS on addr,
// forwarding to the unix socket: the Go standard library's proxy with the
// hub's transport settings (pooled buffers, a large idle pool, buffered
// known-length answers) and none of the hub's authentication or identity
// work. Against the hub it shows how much of the hub's cost is net/http
// itself.
func ServeGoProxy(addr, certFile, keyFile, socket string) error {
	d := &net.Dialer{}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConns:        100,
		MaxIdleConnsPerHost: 100,
		DisableCompression:  true,
	}
	target := &url.URL{Scheme: "http", Host: "upstream"}
	buffers := sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
	rp := &httputil.ReverseProxy{
		Transport:  tr,
		BufferPool: pool{&buffers},
		Rewrite:    func(pr *httputil.ProxyRequest) { pr.SetURL(target); pr.SetXForwarded() },
	}
	return http.ListenAndServeTLS(addr, certFile, keyFile, rp)
}

type pool struct{ p *sync.Pool }

func (p pool) Get() []byte  { return *p.p.Get().(*[]byte) }
func (p pool) Put(b []byte) { p.p.Put(&b) }
