package fairness

import (
	"testing"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/sdk/fairqueue"
)

// TestTreeOfMatchesSDK: sdk/fairqueue cannot import this package, so it
// carries its own copy of the tenant rule for provider queues; both must
// name the same tree for every path.
func TestTreeOfMatchesSDK(t *testing.T) {
	for _, p := range []string{"root", "root:users", "root:users:alice", "root:users:alice:dev:x",
		"root:acme", "root:acme:team-a", "root:acme:team-a:b", "root:usersx:a", "root:users-a:b"} {
		if hub, sdk := string(TreeOf(cluster.Path(p))), fairqueue.TreeOf(p); hub != sdk {
			t.Errorf("TreeOf(%q): hub %q, sdk %q", p, hub, sdk)
		}
	}
}
