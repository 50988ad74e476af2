package server

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	authzunion "k8s.io/apiserver/pkg/authorization/union"

	"github.com/wharfhub/wharf/hub/authn"
	"github.com/wharfhub/wharf/hub/authz/rbac"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/policy"
)

// builtinGrant is one of upstream's bootstrap ClusterRoleBindings that every
// workspace behaves as if it held: kube-apiserver creates them in every
// cluster, and clients (kubectl auth can-i, scripts reading
// SubjectAccessReview status.reason) expect their effect and their names.
// The hub does not store them in workspaces, so a workspace admin can
// neither remove nor widen them, and they count against no quota.
type builtinGrant struct {
	// name is the binding's and its ClusterRole's name, as upstream.
	name   string
	groups []string
	rules  []rbacv1.PolicyRule
}

// reason is upstream's RBAC reason for a grant of this binding to group.
func (g builtinGrant) reason(group string) string {
	return fmt.Sprintf("RBAC: allowed by ClusterRoleBinding %q of ClusterRole %q to Group %q", g.name, g.name, group)
}

// builtinGrants are upstream's grants to every authenticated caller that
// the hub serves: asking about oneself (system:basic-user), API discovery
// (system:discovery) and public information (system:public-info-viewer).
// Upstream lists health and version paths in both of the latter, so
// kubectl auth can-i --list shows them twice there too. Service accounts
// also read the issuer discovery documents
// (system:service-account-issuer-discovery); a service account seen here
// is one of this workspace, since the binding step denied any other.
// Grants upstream has for things the hub does not serve
// (ClusterTrustBundles) are left out: the hub must not claim what it does
// not allow.
var builtinGrants = []builtinGrant{
	{name: "system:basic-user", groups: []string{user.AllAuthenticated}, rules: []rbacv1.PolicyRule{
		{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}},
		{Verbs: []string{"create"}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"selfsubjectreviews"}},
	}},
	{name: "system:discovery", groups: []string{user.AllAuthenticated}, rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, NonResourceURLs: append(policy.DiscoveryURLs(), "/healthz", "/livez", "/readyz")},
	}},
	{name: "system:public-info-viewer", groups: []string{user.AllAuthenticated}, rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, NonResourceURLs: policy.PublicInfoURLs()},
	}},
	{name: "system:service-account-issuer-discovery", groups: []string{serviceaccount.AllServiceAccountsGroup}, rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, NonResourceURLs: policy.IssuerDiscoveryURLs()},
	}},
}

// publicHealth is the part of upstream's system:public-info-viewer binding
// that reaches system:unauthenticated: the health endpoints, which
// kubelet and load balancer probes read without credentials. Upstream
// binds /version to that group as well; the hub authenticates anonymous
// callers on the health paths only (hub/authn HealthPaths), so this grant
// lists exactly those, and the sub-paths (/readyz/etcd) not at all: they
// describe the hub process and are for hub administrators.
var publicHealth = builtinGrant{name: "system:public-info-viewer", groups: []string{user.AllUnauthenticated}, rules: []rbacv1.PolicyRule{
	{Verbs: []string{"get"}, NonResourceURLs: authn.HealthPaths()},
}}

// publicHealthStep allows the anonymous probes. It must run before the
// visibility step, which denies everybody whom no binding of the workspace
// names (an anonymous caller is named by none), and after the guards,
// which keep unclean paths and process-wide ones closed. It allows verb
// get (GET; HEAD is verb head, refused as by upstream's RBAC) of exactly
// the health paths to the anonymous identity and nothing else to anybody:
// an authenticated caller is never in system:unauthenticated (hub-guards
// refuse to impersonate system: names), and reaches the same paths
// through system:discovery after the visibility step, as before.
func publicHealthStep() authzunion.NamedAuthorizer {
	return authzunion.NamedAuthorizer{AuthorizerName: "public-health", Authorizer: authorizer.AuthorizerFunc(authorizePublicHealth)}
}

func authorizePublicHealth(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	u := attrs.GetUser()
	if u == nil || u.GetName() != user.Anonymous || attrs.IsResourceRequest() {
		return authorizer.DecisionNoOpinion, "", nil
	}
	group, ok := memberOf(u, publicHealth.groups)
	if !ok {
		return authorizer.DecisionNoOpinion, "", nil
	}
	for i := range publicHealth.rules {
		if rbac.RuleAllows(attrs, &publicHealth.rules[i]) {
			return authorizer.DecisionAllow, publicHealth.reason(group), nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// builtinStep is the authorizer step of the built-in grants. It runs after
// the visibility step, so only callers who may see the workspace get
// them; as upstream's RBAC, it allows or has no opinion.
func builtinStep() authzunion.NamedAuthorizer {
	return authzunion.NamedAuthorizer{AuthorizerName: "builtin-rbac", Authorizer: authorizer.AuthorizerFunc(authorizeBuiltin)}
}

func authorizeBuiltin(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	u := attrs.GetUser()
	if u == nil {
		return authorizer.DecisionNoOpinion, "", nil
	}
	for _, g := range builtinGrants {
		group, ok := memberOf(u, g.groups)
		if !ok {
			continue
		}
		for i := range g.rules {
			if rbac.RuleAllows(attrs, &g.rules[i]) {
				return authorizer.DecisionAllow, g.reason(group), nil
			}
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// builtinRules is the RuleResolver of the built-in grants, so that
// SelfSubjectRulesReview lists them as upstream lists its bootstrap roles.
type builtinRules struct{}

func (builtinRules) RulesFor(_ context.Context, u user.Info, _ string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	var (
		res    []authorizer.ResourceRuleInfo
		nonRes []authorizer.NonResourceRuleInfo
	)
	if u == nil {
		return nil, nil, false, nil
	}
	for _, g := range builtinGrants {
		if _, ok := memberOf(u, g.groups); !ok {
			continue
		}
		for _, r := range g.rules {
			if len(r.Resources) > 0 {
				res = append(res, &authorizer.DefaultResourceRuleInfo{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources})
			}
			if len(r.NonResourceURLs) > 0 {
				nonRes = append(nonRes, &authorizer.DefaultNonResourceRuleInfo{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
			}
		}
	}
	return res, nonRes, false, nil
}

// memberOf returns the first of groups that u belongs to.
func memberOf(u user.Info, groups []string) (string, bool) {
	for _, want := range groups {
		for _, g := range u.GetGroups() {
			if g == want {
				return g, true
			}
		}
	}
	return "", false
}

// monitoringGroup is upstream's group for scrapers: kube-apiserver's
// bootstrap ClusterRole and ClusterRoleBinding system:monitoring grant it
// get on /metrics and the verbose health paths, so a Prometheus needs no
// administrator's token. Only the operator can put an identity in it: a
// static token (--token-auth-file) or an IdP group when
// --oidc-groups-prefix is empty (the operator's choice, as upstream's).
// Workspace admins cannot: hub service accounts carry
// system:serviceaccounts* only, and hub-guards refuse to impersonate any
// system: group but system:authenticated and the service-account groups.
const monitoringGroup = "system:monitoring"

// monitoringGrant is the hub's system:monitoring: GET of /metrics and of
// the health endpoints with their per-check sub-paths (/readyz/etcd).
// Upstream's role also lists /metrics/slis; the brief of this grant is the
// least a scraper needs, so it is left out. No /debug, no flags, nothing in
// any workspace.
var monitoringGrant = builtinGrant{name: "system:monitoring", groups: []string{monitoringGroup}, rules: []rbacv1.PolicyRule{
	{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics", "/livez", "/livez/*", "/readyz", "/readyz/*", "/healthz", "/healthz/*"}},
}}

// monitoringAllows reports whether the request is one monitoringGrant
// covers. The paths are process-wide, so the grant holds only where they
// are: without a /clusters/ prefix (a workspace is no place to scrape the
// hub from, and a grant must not appear inside one), for an identity that
// is not confined to a workspace (a service-account token or an
// impersonated identity never is a scraper), on a path in clean form.
func monitoringAllows(ctx context.Context, attrs authorizer.Attributes) (string, bool) {
	u := attrs.GetUser()
	if u == nil || attrs.IsResourceRequest() || explicitTarget(ctx) {
		return "", false
	}
	if _, confined := cluster.ConfinedTo(u); confined {
		return "", false
	}
	group, ok := memberOf(u, monitoringGrant.groups)
	if !ok || !clean(attrs.GetPath()) {
		return "", false
	}
	for i := range monitoringGrant.rules {
		if rbac.RuleAllows(attrs, &monitoringGrant.rules[i]) {
			return group, true
		}
	}
	return "", false
}

// monitoringStep allows what monitoringAllows covers. The process-wide
// guard lets exactly these requests through to it, and it runs before the
// visibility step, which would deny a scraper that no binding of root
// names. It allows or has no opinion.
func monitoringStep() authzunion.NamedAuthorizer {
	return authzunion.NamedAuthorizer{AuthorizerName: "monitoring", Authorizer: authorizer.AuthorizerFunc(
		func(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
			if group, ok := monitoringAllows(ctx, attrs); ok {
				return authorizer.DecisionAllow, monitoringGrant.reason(group), nil
			}
			return authorizer.DecisionNoOpinion, "", nil
		})}
}
