package tenantfilter

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wharfhub/wharf/providers/tenantfilter/core"
)

// grantsOptions are the options the grants engine's scenarios vary; each
// maps to capsule-proxy's flag on the real standalone binary.
type grantsOptions struct {
	ClusterScoped        bool // --feature-gates=ProxyClusterScoped=true
	NoRequireCapsuleUser bool // --require-capsule-user=false
	AllNamespaced        bool // --feature-gates=ProxyAllNamespaced=true
}

func (o grantsOptions) args() []string {
	var gates []string
	if o.ClusterScoped {
		gates = append(gates, core.GateProxyClusterScoped+"=true")
	}
	if o.AllNamespaced {
		gates = append(gates, core.GateProxyAllNamespaced+"=true")
	}
	var args []string
	if len(gates) > 0 {
		args = append(args, "--feature-gates="+strings.Join(gates, ","))
	}
	if o.NoRequireCapsuleUser {
		args = append(args, "--require-capsule-user=false")
	}
	return args
}

// target is what the scenarios need of a running filter.
type target = *proxy

// startGrantsTarget starts the standalone binary (HTTPS, bearer tokens by
// TokenReview) against the fixture with the options.
func startGrantsTarget(t *testing.T, o grantsOptions) target {
	t.Helper()
	return startProxy(t, proxyOptions{TLS: true, Args: o.args()})
}

// inProcess sends raw requests to an in-process core's TLS test server.
// The grants scenarios now run on the binary only; this stays because the
// namespace scenarios' in-process target (namespaces_test.go) reuses its Do.
type inProcess struct {
	srv *httptest.Server
}

func (p *inProcess) Do(t testing.TB, user, method, path string, body string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, p.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+fx.Token(t, user))
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, string(b)
}
