package rules

import (
	"fmt"
	"strings"
)

// MatchAPIGroup reports whether an apiGroups pattern selects group/version:
//   - "" is the core group only;
//   - a pattern with "/" matches "<group>/<version>" ("apps/v1", "apps/*",
//     "*/v1", "a*s/v1");
//   - any other pattern matches the group, whatever the version.
//
// "*" is the only wildcard and matches any run of characters, the empty one
// included (so "*" also selects the core group); dots and every other
// character are literal.
func MatchAPIGroup(pattern, group, version string) bool {
	if pattern == "" {
		return group == ""
	}
	if pg, pv, ok := strings.Cut(pattern, "/"); ok {
		return glob(pg, group) && glob(pv, version)
	}
	return glob(pattern, group)
}

// matchAnyGroup: an empty list matches nothing.
func matchAnyGroup(patterns []string, group, version string) bool {
	for _, p := range patterns {
		if MatchAPIGroup(p, group, version) {
			return true
		}
	}
	return false
}

// matchResource: plural names or "*"; an empty list matches nothing.
// Subresources are never selected (the caller passes the bare resource).
func matchResource(resources []string, resource string) bool {
	for _, r := range resources {
		if r == "*" || r == resource {
			return true
		}
	}
	return false
}

// glob matches s against p where '*' matches any run of characters.
func glob(p, s string) bool {
	// Iterative matcher with one backtrack point: linear enough for the
	// short patterns settings objects carry, and no regexp compilation of
	// administrator input.
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(p) && p[pi] == s[si]:
			pi++
			si++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// verbSet is a small set of Kubernetes verbs.
type verbSet map[string]bool

// globalVerbs maps a global rule's operations to effective verbs (the spec's
// table: omitted → list,get; [List] → list,get; [Get] → get;
// [List,Get] → list,get). An operation other than List or Get makes the
// entry invalid: it grants nothing.
func globalVerbs(ops []string) (verbSet, error) {
	if len(ops) == 0 {
		return verbSet{"list": true, "get": true}, nil
	}
	v := verbSet{}
	for _, op := range ops {
		switch op {
		case OpList:
			v["list"], v["get"] = true, true
		case OpGet:
			v["get"] = true
		default:
			return nil, &InvalidEntry{Reason: ReasonInvalidOperation, Message: fmt.Sprintf("operation %q is not supported; use List or Get", op)}
		}
	}
	return v, nil
}

// legacyVerbs maps a legacy grant's operations to verbs. List is list and
// get; Update is update and patch (label, taint, cordon), plus get because
// kubectl reads an object before patching it; Delete is delete. Unknown
// operations grant nothing.
func legacyVerbs(ops []string) verbSet {
	v := verbSet{}
	for _, op := range ops {
		switch op {
		case OpList:
			v["list"], v["get"] = true, true
		case OpUpdate:
			v["update"], v["patch"], v["get"] = true, true, true
		case OpDelete:
			v["delete"] = true
		}
	}
	return v
}
