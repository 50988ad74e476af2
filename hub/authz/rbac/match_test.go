package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// TestRuleAllows ports the upstream rule-matching table: each rule is tried
// against requests that vary one dimension at a time.
func TestRuleAllows(t *testing.T) {
	u := usr("u")
	r := func(verb, group, resource, sub, name string) authorizer.AttributesRecord {
		return res(u, verb, group, resource, sub, "", name)
	}
	p := func(verb, path string) authorizer.AttributesRecord { return nonRes(u, verb, path) }

	tests := []struct {
		name  string
		rule  rbacv1.PolicyRule
		allow []authorizer.AttributesRecord
		deny  []authorizer.AttributesRecord
	}{
		{
			name:  "star verb",
			rule:  rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"g1"}, Resources: []string{"r1"}},
			allow: []authorizer.AttributesRecord{r("v1", "g1", "r1", "", ""), r("v2", "g1", "r1", "", "")},
			deny:  []authorizer.AttributesRecord{r("v1", "g2", "r1", "", ""), r("v1", "g1", "r2", "", ""), r("v2", "g2", "r2", "", "")},
		},
		{
			name:  "star group",
			rule:  rbacv1.PolicyRule{Verbs: []string{"v1"}, APIGroups: []string{"*"}, Resources: []string{"r1"}},
			allow: []authorizer.AttributesRecord{r("v1", "g1", "r1", "", ""), r("v1", "g2", "r1", "", ""), r("v1", "", "r1", "", "")},
			deny:  []authorizer.AttributesRecord{r("v1", "g1", "r2", "", ""), r("v2", "g1", "r1", "", "")},
		},
		{
			name:  "star resource",
			rule:  rbacv1.PolicyRule{Verbs: []string{"v1"}, APIGroups: []string{"g1"}, Resources: []string{"*"}},
			allow: []authorizer.AttributesRecord{r("v1", "g1", "r1", "", ""), r("v1", "g1", "r2", "", ""), r("v1", "g1", "r1", "status", "")},
			deny:  []authorizer.AttributesRecord{r("v1", "g2", "r1", "", ""), r("v2", "g1", "r1", "", "")},
		},
		{
			name: "tuple expansion",
			rule: rbacv1.PolicyRule{Verbs: []string{"v1", "v2"}, APIGroups: []string{"g1", "g2"}, Resources: []string{"r1", "r2"}},
			allow: []authorizer.AttributesRecord{
				r("v1", "g1", "r1", "", ""), r("v1", "g2", "r1", "", ""), r("v1", "g1", "r2", "", ""), r("v1", "g2", "r2", "", ""),
				r("v2", "g1", "r1", "", ""), r("v2", "g2", "r1", "", ""), r("v2", "g1", "r2", "", ""), r("v2", "g2", "r2", "", ""),
			},
			deny: []authorizer.AttributesRecord{r("v3", "g1", "r1", "", ""), r("v1", "g3", "r1", "", ""), r("v1", "g1", "r3", "", "")},
		},
		{
			name:  "exact subresource",
			rule:  rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"r1/s1"}},
			allow: []authorizer.AttributesRecord{r("v1", "g1", "r1", "s1", ""), r("v2", "g2", "r1", "s1", "")},
			deny:  []authorizer.AttributesRecord{r("v1", "g1", "r1", "s2", ""), r("v1", "g1", "r2", "s1", ""), r("v1", "g1", "r1", "", "")},
		},
		{
			name:  "any resource's subresource",
			rule:  rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}},
			allow: []authorizer.AttributesRecord{r("get", "apps", "deployments", "scale", ""), r("get", "", "anything", "scale", "")},
			deny:  []authorizer.AttributesRecord{r("get", "apps", "deployments", "", ""), r("get", "apps", "deployments", "status", "")},
		},
		{
			name:  "bare resource does not cover its subresources",
			rule:  rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"pods"}},
			allow: []authorizer.AttributesRecord{r("get", "", "pods", "", "")},
			deny:  []authorizer.AttributesRecord{r("get", "", "pods", "status", ""), r("get", "", "pods", "log", "")},
		},
		{
			name:  "resourceNames",
			rule:  named(rbacv1.PolicyRule{Verbs: []string{"get", "update"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}, "a", "b"),
			allow: []authorizer.AttributesRecord{r("get", "", "configmaps", "", "a"), r("update", "", "configmaps", "", "b")},
			// A request without a name (list, create) is not covered by a
			// name-restricted rule.
			deny: []authorizer.AttributesRecord{r("get", "", "configmaps", "", "c"), r("get", "", "configmaps", "", ""), r("delete", "", "configmaps", "", "a")},
		},
		{
			name:  "star URL",
			rule:  rbacv1.PolicyRule{Verbs: []string{"v1"}, NonResourceURLs: []string{"*"}},
			allow: []authorizer.AttributesRecord{p("v1", "/foo"), p("v1", "/foo/bar"), p("v1", "/foo/baz/one")},
			deny:  []authorizer.AttributesRecord{p("v2", "/foo"), p("v2", "/foo/bar/one")},
		},
		{
			name:  "URL prefix",
			rule:  rbacv1.PolicyRule{Verbs: []string{"v1"}, NonResourceURLs: []string{"/foo/*"}},
			allow: []authorizer.AttributesRecord{p("v1", "/foo/bar"), p("v1", "/foo/baz"), p("v1", "/foo/bar/one")},
			deny:  []authorizer.AttributesRecord{p("v1", "/foo"), p("v1", "/notfoo"), p("v1", "/notfoo/bar"), p("v2", "/foo/bar")},
		},
		{
			name:  "exact URLs, star verb",
			rule:  rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"/foo", "/foo/bar/one"}},
			allow: []authorizer.AttributesRecord{p("v1", "/foo"), p("v2", "/foo"), p("v1", "/foo/bar/one")},
			deny:  []authorizer.AttributesRecord{p("v1", "/foo/bar"), p("v1", "/foo/baz"), p("v2", "/foo/baz/one")},
		},
		{
			name: "resource rule never matches a URL and vice versa",
			rule: rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			deny: []authorizer.AttributesRecord{p("get", "/healthz"), p("get", "/")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range tc.allow {
				if !RuleAllows(c, &tc.rule) {
					t.Errorf("should allow %s", describe(c))
				}
			}
			for _, c := range tc.deny {
				if RuleAllows(c, &tc.rule) {
					t.Errorf("should not allow %s", describe(c))
				}
			}
			if len(tc.allow) > 0 && !RulesAllow(tc.allow[0], rbacv1.PolicyRule{}, tc.rule) {
				t.Errorf("RulesAllow should find the rule among several")
			}
		})
	}
}
