package serviceaccounts

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/wharfhub/wharf/hub/cluster"
)

// Binding is the authorizer step that confines service-account tokens,
// and impersonated identities, to their workspace (cluster.ConfinedTo). It runs first in the chain and either denies or has no
// opinion, so RBAC of the token's own workspace still decides everything
// else.
type Binding struct {
	// Resolve completes the request's workspace resolution: it returns a
	// context carrying the request's cluster (cluster.From) when the
	// request addresses one existing workspace.
	Resolve func(ctx context.Context) context.Context
}

// Authorize (an authorizer.AuthorizerFunc) denies a bound identity everywhere but in its own workspace:
// another workspace, /clusters/* and an unresolvable workspace alike.
func (b Binding) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	bound, ok := BoundCluster(a.GetUser())
	if !ok {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if t, ok := cluster.TargetFrom(ctx); (ok && t.IsWildcard()) || cluster.IsWildcard(ctx) {
		return authorizer.DecisionDeny, "this identity is valid in its own workspace only, not /clusters/*", nil
	}
	if b.Resolve != nil {
		ctx = b.Resolve(ctx)
	}
	id, ok := cluster.From(ctx)
	if !ok || bound == "" || id != bound {
		return authorizer.DecisionDeny, fmt.Sprintf("an identity confined to workspace %q is not valid here", bound), nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}
