package clusters

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// TestClients: one client per workspace, built once with that workspace's
// URL and the provider's credentials; no client for every workspace, nor
// for a name that would leave its path segment; a failed build is not
// kept.
func TestClients(t *testing.T) {
	type built struct{ host, token string }
	calls := 0
	fail := true
	c := NewClients(&rest.Config{Host: "https://hub.example:6443/clusters/root", BearerToken: "provider-token"},
		func(cfg *rest.Config) (*built, error) {
			calls++
			if strings.HasSuffix(cfg.Host, "/flaky") && fail {
				fail = false
				return nil, errors.New("transient")
			}
			return &built{host: cfg.Host, token: cfg.BearerToken}, nil
		})
	for _, tc := range []struct {
		name, cluster, host, err string
		calls                    int // build calls so far
	}{
		{name: "by path", cluster: "root:acme", host: "https://hub.example:6443/clusters/root:acme", calls: 1},
		{name: "kept", cluster: "root:acme", host: "https://hub.example:6443/clusters/root:acme", calls: 1},
		{name: "by id", cluster: "k3x9q2m7a1b4c8d0", host: "https://hub.example:6443/clusters/k3x9q2m7a1b4c8d0", calls: 2},
		{name: "wildcard refused", cluster: "*", err: "every workspace", calls: 2},
		{name: "escape refused", cluster: "root/../x", err: "clusters:", calls: 2},
		{name: "failed build", cluster: "flaky", err: "transient", calls: 3},
		{name: "failure not kept", cluster: "flaky", host: "https://hub.example:6443/clusters/flaky", calls: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.For(tc.cluster)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("For(%q) = %v, %v; want error with %q", tc.cluster, got, err, tc.err)
				}
			case err != nil:
				t.Errorf("For(%q): %v", tc.cluster, err)
			case got.host != tc.host || got.token != "provider-token":
				t.Errorf("For(%q) built for %+v, want host %s with the provider's token", tc.cluster, got, tc.host)
			}
			if calls != tc.calls {
				t.Errorf("build called %d times, want %d", calls, tc.calls)
			}
		})
	}
}
