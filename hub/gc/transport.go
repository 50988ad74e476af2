package gc

import (
	"fmt"
	"net/http"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/hub/cluster"
)

// clusterTransport addresses each request of a loopback client to the
// logical cluster of its context: /clusters/<id>/... for a cluster,
// /clusters/*/... for a wildcard list or watch. A request whose context
// names neither is refused before it leaves the process, as the storage
// decorator refuses a call without a cluster: the collector must never act
// on whatever workspace an unprefixed URL would default to.
type clusterTransport struct{ next http.RoundTripper }

func (t clusterTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	var seg string
	if id, ok := cluster.From(ctx); ok {
		seg = string(id)
	} else if cluster.IsWildcard(ctx) && req.Method == http.MethodGet {
		seg = cluster.WildcardRaw
	} else {
		return nil, fmt.Errorf("garbage collector request %s %s without a logical cluster in context: refused", req.Method, req.URL.Path)
	}
	if strings.HasPrefix(req.URL.Path, "/clusters/") {
		return nil, fmt.Errorf("garbage collector request %s already addresses a cluster: refused", req.URL.Path)
	}
	out := req.Clone(ctx)
	out.URL.Path = "/clusters/" + seg + req.URL.Path
	if req.URL.RawPath != "" {
		out.URL.RawPath = "/clusters/" + seg + req.URL.RawPath
	}
	return t.next.RoundTrip(out)
}

// clusterConfig returns a copy of a loopback config whose requests go
// through clusterTransport.
func clusterConfig(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper { return clusterTransport{next: rt} })
	return out
}
