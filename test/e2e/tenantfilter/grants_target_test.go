package tenantfilter

import (
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
