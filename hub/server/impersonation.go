package server

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	authzunion "k8s.io/apiserver/pkg/authorization/union"

	"github.com/wharfhub/wharf/hub/cluster"
)

// confinedExtraHeader asks upstream's impersonation filter for the
// confinement extra (cluster.ConfinedExtra). The key is escaped as
// client-go escapes extra keys; the filter lowercases and unescapes it.
var confinedExtraHeader = authenticationv1.ImpersonateUserExtraHeaderPrefix + url.PathEscape(cluster.ConfinedExtra)

// unresolvedCluster is the confinement value of a request whose workspace
// does not resolve. It is no logical cluster id (those are base36), so the
// impersonation is refused and the identity could act nowhere anyway.
const unresolvedCluster = "unresolved"

// withImpersonationConfinement wraps the request authenticator so that
// every impersonating request also asks to impersonate the confinement
// extra, naming the workspace of the request. Upstream's impersonation
// filter (constrained and legacy alike) runs right after authentication
// and sees no workspace: /clusters/<x> is stripped before it, and its
// decision caches (about 10 s) key on the requester, the wanted user and
// the request attributes only. Putting the workspace into the wanted user
// does two things at the root:
//
//   - every cache key of that filter holds the workspace, so a decision
//     made in one workspace is never reused in another;
//   - the impersonated identity carries the workspace in which the
//     impersonation was allowed, and serviceaccounts.Binding confines it
//     there, as it confines service-account tokens.
//
// A value the client added under the same key stays in the request: the
// hub guards refuse any value but the request's own workspace, and an
// identity with two values is confined to nothing. An authenticator is the
// one hook between authentication and impersonation; upstream's
// authentication filter edits headers in the same place (it deletes
// Authorization).
func withImpersonationConfinement(a authenticator.Request, resolve func(context.Context) context.Context) authenticator.Request {
	return authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		resp, ok, err := a.AuthenticateRequest(req)
		if err != nil || !ok || req.Header.Get(authenticationv1.ImpersonateUserHeader) == "" {
			return resp, ok, err
		}
		req.Header.Add(confinedExtraHeader, requestCluster(resolve(req.Context())))
		return resp, ok, err
	})
}

// requestCluster names the logical cluster a request addresses, "*" for
// the wildcard, or unresolvedCluster.
func requestCluster(ctx context.Context) string {
	if t, ok := cluster.TargetFrom(ctx); (ok && t.IsWildcard()) || cluster.IsWildcard(ctx) {
		return cluster.WildcardRaw
	}
	if id, ok := cluster.From(ctx); ok {
		return string(id)
	}
	return unresolvedCluster
}

// isImpersonateVerb reports whether verb asks to impersonate something:
// legacy "impersonate" or a constrained "impersonate:<mode>" (user-info,
// serviceaccount, arbitrary-node, associated-node). The constrained
// "impersonate-on:<mode>:<verb>" checks carry the request's attributes,
// not the impersonated identity, and are not among them: the identity is
// always checked too, with impersonate:<mode>.
func isImpersonateVerb(verb string) bool {
	return verb == "impersonate" || strings.HasPrefix(verb, "impersonate:")
}

// isConfinementMarker reports whether attrs ask to impersonate the
// confinement extra with the value v.
func isConfinementMarker(attrs authorizer.Attributes) (v string, ok bool) {
	if !attrs.IsResourceRequest() || !isImpersonateVerb(attrs.GetVerb()) ||
		attrs.GetAPIGroup() != authenticationv1.GroupName || attrs.GetResource() != "userextras" ||
		strings.ToLower(attrs.GetSubresource()) != cluster.ConfinedExtra {
		return "", false
	}
	return attrs.GetName(), true
}

// confinementMarker allows impersonating the confinement extra with the
// request's own workspace as value, whatever else RBAC grants: the hub
// asks for it on every impersonation (withImpersonationConfinement), and
// it only ever narrows what the identity may do. Other values are denied
// by the hub guards, which run first.
func confinementMarker(resolve func(context.Context) context.Context) authzunion.NamedAuthorizer {
	return authzunion.NamedAuthorizer{AuthorizerName: "impersonation-confinement", Authorizer: authorizer.AuthorizerFunc(
		func(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
			v, ok := isConfinementMarker(attrs)
			if !ok {
				return authorizer.DecisionNoOpinion, "", nil
			}
			if id, ok := cluster.From(resolve(ctx)); ok && string(id) == v {
				return authorizer.DecisionAllow, "impersonation confined to the request's workspace", nil
			}
			return authorizer.DecisionNoOpinion, "", nil
		})}
}
