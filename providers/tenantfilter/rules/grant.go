package rules

import (
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/labels"
)

// Grant is the provider's own grant to one caller on one cluster-scoped
// resource: the union of the applicable global entries and class grants.
// The zero Grant grants nothing.
type Grant struct {
	global []globalSelection
	legacy []legacySelection
}

// Evaluate computes the caller's grant on res. Class grants (owners and
// ProxySettings) are always on; global rules need ProxyClusterScoped. With
// --require-capsule-user (the default) only tenant users get anything.
// Namespaced resources are never granted.
func (s *Snapshot) Evaluate(cfg Config, id Identity, res Resource) Grant {
	if res.Namespaced || (cfg.RequireCapsuleUser && !id.TenantUser) {
		return Grant{}
	}
	g := Grant{global: s.globalSelections(cfg, id, res)}
	if kind, ok := LegacyKind(res.Group, res.Resource); ok {
		g.legacy = s.legacySelections(id, kind)
	}
	return g
}

// Empty reports whether the grant grants nothing.
func (g Grant) Empty() bool { return len(g.global) == 0 && len(g.legacy) == 0 }

// Allows reports whether some source grants verb at all (on some objects).
// Global entries only ever give list and get.
func (g Grant) Allows(verb string) bool {
	for _, s := range g.global {
		if s.verbs[verb] {
			return true
		}
	}
	for _, s := range g.legacy {
		if s.verbs[verb] {
			return true
		}
	}
	return false
}

// Verbs lists the verbs the grant allows, sorted.
func (g Grant) Verbs() []string {
	var out []string
	for _, v := range []string{"delete", "get", "list", "patch", "update"} {
		if g.Allows(v) {
			out = append(out, v)
		}
	}
	return out
}

// Permits reports whether verb is granted on this object: a class grant
// with the verb selects it, or the object's labels match ONE complete
// global selector with the verb. This is the check for named requests
// (get, update, patch, delete); a rule never grants outside its selector.
func (g Grant) Permits(verb string, o Object) bool {
	for _, s := range g.legacy {
		if s.verbs[verb] && s.match(o) {
			return true
		}
	}
	if verb != "get" && verb != "list" {
		return false
	}
	set := labels.Set(o.Labels)
	for _, s := range g.global {
		if s.verbs[verb] && s.selector.Matches(set) {
			return true
		}
	}
	return false
}

// ListFilter returns the predicate a LIST is filtered with: the class
// grants with list, OR the single selector the list-granting global entries
// combine into. When they cannot be combined it returns ErrCannotCombine
// (the core answers BadRequest). ok is false when nothing grants list.
func (g Grant) ListFilter() (filter func(Object) bool, ok bool, err error) {
	var legacy []func(Object) bool
	for _, s := range g.legacy {
		if s.verbs["list"] {
			legacy = append(legacy, s.match)
		}
	}
	var norms []normalized
	for _, s := range g.global {
		if s.verbs["list"] {
			norms = append(norms, s.norm)
		}
	}
	if len(legacy) == 0 && len(norms) == 0 {
		return nil, false, nil
	}
	var sel labels.Selector
	if len(norms) > 0 {
		merged, err := combine(norms)
		if err != nil {
			return nil, true, err
		}
		if sel, err = merged.selector(); err != nil {
			return nil, true, ErrCannotCombine
		}
	}
	return func(o Object) bool {
		for _, m := range legacy {
			if m(o) {
				return true
			}
		}
		return sel != nil && sel.Matches(labels.Set(o.Labels))
	}, true, nil
}

// Sources names what grants verb, sorted, for logs and review reasons.
func (g Grant) Sources(verb string) []string {
	var out []string
	for _, s := range g.global {
		if s.verbs[verb] {
			out = append(out, "GlobalProxySettings "+s.source)
		}
	}
	for _, s := range g.legacy {
		if s.verbs[verb] {
			src := s.source
			if src == "owner" {
				src = "owner of tenant " + s.tenant
			}
			out = append(out, src)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}
