package rbac

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// The matchers below follow rbac/v1 semantics. They are re-implemented here
// because the upstream copies live in k8s.io/kubernetes, which Wharf must not
// import; their behaviour is pinned by match_test.go.

// RulesAllow reports whether any of rules permits the request.
func RulesAllow(attrs authorizer.Attributes, rules ...rbacv1.PolicyRule) bool {
	for i := range rules {
		if RuleAllows(attrs, &rules[i]) {
			return true
		}
	}
	return false
}

// RuleAllows reports whether a single rule permits the request. Resource
// requests are matched on verb, API group, resource (with subresource) and
// name; everything else is matched on verb and URL path.
func RuleAllows(attrs authorizer.Attributes, rule *rbacv1.PolicyRule) bool {
	if !verbMatches(rule.Verbs, attrs.GetVerb()) {
		return false
	}
	if !attrs.IsResourceRequest() {
		return nonResourceURLMatches(rule.NonResourceURLs, attrs.GetPath())
	}
	return apiGroupMatches(rule.APIGroups, attrs.GetAPIGroup()) &&
		resourceMatches(rule.Resources, attrs.GetResource(), attrs.GetSubresource()) &&
		resourceNameMatches(rule.ResourceNames, attrs.GetName())
}

func verbMatches(verbs []string, verb string) bool {
	for _, v := range verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

func apiGroupMatches(groups []string, group string) bool {
	for _, g := range groups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

// resourceMatches accepts "*", the exact "resource" or "resource/sub", and
// "*/sub" for any resource's subresource. A bare resource never grants its
// subresources: pods does not cover pods/status.
func resourceMatches(resources []string, resource, subresource string) bool {
	for _, r := range resources {
		if r == rbacv1.ResourceAll {
			return true
		}
		if subresource == "" {
			if r == resource {
				return true
			}
			continue
		}
		head, tail, ok := strings.Cut(r, "/")
		if !ok || tail != subresource {
			continue
		}
		if head == resource || head == rbacv1.ResourceAll {
			return true
		}
	}
	return false
}

// resourceNameMatches treats an empty list as "every name". A request without
// a name (list, create, deletecollection) only matches such unrestricted rules.
func resourceNameMatches(names []string, name string) bool {
	if len(names) == 0 {
		return true
	}
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// NonResourceURLMatches reports whether path matches one of urls with RBAC's
// rules for nonResourceURLs, so that allowlists outside RBAC (the hub's
// process-wide guard) read patterns exactly as a PolicyRule would.
func NonResourceURLMatches(urls []string, path string) bool { return nonResourceURLMatches(urls, path) }

// nonResourceURLMatches accepts "*", an exact path, or a prefix ending in "*".
func nonResourceURLMatches(urls []string, path string) bool {
	for _, u := range urls {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}
