package providerauth

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
)

// Scope is what the authorizer needs to know about enablement.
type Scope interface {
	// Groups returns the API groups a provider owns.
	Groups(provider string) []string
	// Enabled reports whether the provider is enabled in a cluster.
	Enabled(id cluster.ID, provider string) bool
}

// ClusterOf resolves the request's workspace for authorization: the
// outermost filter may not have resolved it yet.
type ClusterOf func(ctx context.Context) (id cluster.ID, wildcard bool, ok bool)

// Authorizer scopes provider identities; see the package doc.
type Authorizer struct {
	scope     Scope
	clusterOf ClusterOf
}

// NewAuthorizer returns the provider authorizer.
func NewAuthorizer(s Scope, clusterOf ClusterOf) *Authorizer {
	return &Authorizer{scope: s, clusterOf: clusterOf}
}

var (
	readVerbs     = sets.New("get", "list", "watch")
	wildcardVerbs = sets.New("list", "watch")
	// eventVerbs are what client-go's event recorder needs (sdk.EventRecorder).
	eventVerbs = sets.New("create", "patch", "update")
)

// Authorize implements authorizer.Authorizer.
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	provider, ok := Provider(attrs.GetUser())
	if !ok || !attrs.IsResourceRequest() {
		return authorizer.DecisionNoOpinion, "", nil
	}
	id, wildcard, ok := a.clusterOf(ctx)
	if !ok {
		return authorizer.DecisionNoOpinion, "", nil
	}
	own := slices.Contains(a.scope.Groups(provider), attrs.GetAPIGroup())
	if wildcard {
		if own && wildcardVerbs.Has(attrs.GetVerb()) && attrs.GetNamespace() == "" {
			return authorizer.DecisionAllow, "provider lists its own resources across workspaces", nil
		}
		return authorizer.DecisionDeny, "providers may only list and watch their own resources across workspaces", nil
	}
	enabled := a.scope.Enabled(id, provider)
	switch {
	case own && enabled:
		return authorizer.DecisionAllow, "provider's own API in a workspace that enabled it", nil
	case own:
		return authorizer.DecisionDeny, "provider is not enabled in this workspace", nil
	case enabled && attrs.GetAPIGroup() == providersv1alpha1.GroupName && attrs.GetResource() == "providerbindings" &&
		attrs.GetSubresource() == "" && readVerbs.Has(attrs.GetVerb()):
		return authorizer.DecisionAllow, "provider reads bindings where it is enabled", nil
	case enabled && attrs.GetResource() == "events" && attrs.GetSubresource() == "" && eventVerbs.Has(attrs.GetVerb()) &&
		(attrs.GetAPIGroup() == "" || attrs.GetAPIGroup() == "events.k8s.io"):
		return authorizer.DecisionAllow, "provider records events where it is enabled", nil
	case enabled && attrs.GetAPIGroup() == "authentication.k8s.io" && attrs.GetResource() == "tokenreviews" &&
		attrs.GetSubresource() == "" && attrs.GetVerb() == "create":
		// A provider verifies the tokens its callers (edge agents,
		// plugins' clients) present, as a webhook authenticator would; the
		// review only reports identities of that workspace.
		return authorizer.DecisionAllow, "provider reviews tokens where it is enabled", nil
	case enabled && attrs.GetAPIGroup() == "authorization.k8s.io" && attrs.GetResource() == "subjectaccessreviews" &&
		attrs.GetSubresource() == "" && attrs.GetVerb() == "create":
		// A provider authorizes its callers (the edges egress for
		// client-certificate callers) as a webhook authorizer would: the
		// review is evaluated in this workspace only.
		return authorizer.DecisionAllow, "provider reviews access where it is enabled", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// IsProvider reports whether u is a provider identity; the wildcard
// admission uses it (authorization has already scoped what a provider may
// do there).
func IsProvider(u user.Info) bool {
	_, ok := Provider(u)
	return ok
}
