package server

import (
	"context"
	"path"

	"k8s.io/apiserver/pkg/authorization/authorizer"
	authzunion "k8s.io/apiserver/pkg/authorization/union"

	"github.com/wharfhub/wharf/hub/authz/rbac"
	"github.com/wharfhub/wharf/hub/policy"
)

// processWideGuard denies non-resource requests that are about the hub
// process rather than a workspace to everyone but hub administrators.
//
// Every workspace is a full Kubernetes API, so its admin holds
// nonResourceURLs "*" as upstream's cluster-admin does. But /metrics,
// /debug/pprof, PUT /debug/flags/v, /flagz, /statusz and the like are served
// once per process, with or without a /clusters/<workspace> prefix: a grant
// stored in one tenant's workspace must not reach them. So the rule is an
// allowlist, not a denylist: only policy.WorkspaceURLs (upstream's discovery
// and public-info paths), policy.IssuerDiscoveryURLs (the service-account
// issuer's documents, hub-wide public keys) and the in-process access check fall through to
// workspace RBAC; any other non-resource path, including ones a library
// adds later, is denied here before any authorizer that could allow it.
//
// Paths that are not in clean form ("/api/../metrics", "/api//x") are
// denied too: a prefix pattern such as "/api/*" must not match a path that
// a router may resolve elsewhere.
//
// The denial carries no reason, as the chain's own end (no authorizer
// allowed) and kube-apiserver's RBAC: a process-wide path looks like any
// other path the caller may not use.
func processWideGuard(a admins) authzunion.NamedAuthorizer {
	allowed := append(policy.WorkspaceURLs(), policy.IssuerDiscoveryURLs()...)
	g := processWide{admins: a, allowed: allowed}
	return authzunion.NamedAuthorizer{AuthorizerName: "process-wide", Authorizer: authorizer.AuthorizerFunc(g.Authorize)}
}

type processWide struct {
	admins  admins
	allowed []string
}

func (g processWide) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.IsResourceRequest() || g.admins.has(attrs.GetUser()) {
		return authorizer.DecisionNoOpinion, "", nil
	}
	// Scrapers (system:monitoring, builtinpolicy.go) read /metrics and the
	// health sub-paths outside every workspace; the monitoring step allows
	// exactly what passes here.
	if _, ok := monitoringAllows(ctx, attrs); ok {
		return authorizer.DecisionNoOpinion, "", nil
	}
	p := attrs.GetPath()
	if attrs.GetVerb() == policy.AccessVerb && p == policy.AccessPath {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if clean(p) && rbac.NonResourceURLMatches(g.allowed, p) {
		return authorizer.DecisionNoOpinion, "", nil
	}
	return authorizer.DecisionDeny, "", nil
}

// clean reports whether p is an absolute path in canonical form, allowing
// one trailing slash ("/version/" is an upstream pattern).
func clean(p string) bool {
	c := path.Clean(p)
	return len(p) > 0 && p[0] == '/' && (c == p || c+"/" == p)
}
