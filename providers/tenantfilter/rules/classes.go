package rules

import (
	"regexp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// legacyKinds maps the class kinds to the resources they grant.
var legacyKinds = map[string]struct{ group, resource string }{
	Nodes:             {"", "nodes"},
	StorageClasses:    {"storage.k8s.io", "storageclasses"},
	IngressClasses:    {"networking.k8s.io", "ingressclasses"},
	PriorityClasses:   {"scheduling.k8s.io", "priorityclasses"},
	RuntimeClasses:    {"node.k8s.io", "runtimeclasses"},
	PersistentVolumes: {"", "persistentvolumes"},
}

// LegacyKind names the class kind granting group/resource, if any.
func LegacyKind(group, resource string) (string, bool) {
	for k, gr := range legacyKinds {
		if gr.group == group && gr.resource == resource {
			return k, true
		}
	}
	return "", false
}

// legacySelection is one class grant: verbs over a tenant's selection.
type legacySelection struct {
	tenant string
	source string // "owner" or "ProxySetting <ns>/<name>"
	verbs  verbSet
	match  func(Object) bool
}

// tenantMatcher returns the predicate selecting the objects of kind the
// tenant may use. Unknown kinds and unusable specs select nothing.
func (s *Snapshot) tenantMatcher(t *Tenant, kind string) func(Object) bool {
	switch kind {
	case Nodes:
		// A tenant without a nodeSelector may schedule anywhere, so it
		// sees every node.
		sel := labels.SelectorFromSet(t.NodeSelector)
		return func(o Object) bool { return sel.Matches(labels.Set(o.Labels)) }
	case StorageClasses:
		return allowedMatcher(t.StorageClasses, true)
	case IngressClasses:
		return allowedMatcher(t.IngressClasses, true)
	case PriorityClasses:
		return allowedMatcher(t.PriorityClasses, true)
	case RuntimeClasses:
		return allowedMatcher(t.RuntimeClasses, true)
	case PersistentVolumes:
		nss := s.namespacesOf(t.Name)
		return func(o Object) bool { return o.ClaimNamespace != "" && slices.Contains(nss, o.ClaimNamespace) }
	}
	return func(Object) bool { return false }
}

// allowedMatcher selects classes by name (allowed, the default, the
// allowedRegex, matched unanchored as Capsule does) or by the list's label
// selector. A nil list selects nothing, as in capsule-proxy; an empty
// selector selects nothing here (it is optional in the Tenant, and
// "everything" would be the wrong reading of an absent field).
func allowedMatcher(a *AllowedList, withDefault bool) func(Object) bool {
	if a == nil {
		return func(Object) bool { return false }
	}
	var re *regexp.Regexp
	if a.AllowedRegex != "" {
		// An invalid regexp matches nothing rather than failing the
		// whole grant.
		re, _ = regexp.Compile(a.AllowedRegex)
	}
	var sel labels.Selector
	if len(a.MatchLabels) > 0 || len(a.MatchExpressions) > 0 {
		if s, err := metav1.LabelSelectorAsSelector(&a.LabelSelector); err == nil {
			sel = s
		}
	}
	names := slices.Clone(a.Allowed)
	def := ""
	if withDefault {
		def = a.Default
	}
	return func(o Object) bool {
		switch {
		case o.Name == "":
			return false
		case slices.Contains(names, o.Name), def != "" && o.Name == def:
			return true
		case re != nil && re.MatchString(o.Name):
			return true
		case sel != nil && sel.Matches(labels.Set(o.Labels)):
			return true
		}
		return false
	}
}

// ownerOps is the union of the operations the tenant's owners hold on kind:
// the most a ProxySetting in the tenant can hand out.
func ownerOps(t *Tenant, kind string) []string {
	var ops []string
	for _, o := range t.Owners {
		for _, g := range o.ProxySettings {
			if g.Kind == kind {
				ops = append(ops, g.Operations...)
			}
		}
	}
	return ops
}

// legacySelections collects the class grants for the caller on kind: as an
// owner of each tenant, then as a ProxySetting subject.
func (s *Snapshot) legacySelections(id Identity, kind string) []legacySelection {
	var out []legacySelection
	for _, t := range s.OwnedTenants(id) {
		for _, o := range t.Owners {
			if !id.Matches(o.Subject) {
				continue
			}
			for _, g := range o.ProxySettings {
				if g.Kind != kind {
					continue
				}
				if v := legacyVerbs(g.Operations); len(v) > 0 {
					out = append(out, legacySelection{tenant: t.Name, source: "owner", verbs: v, match: s.tenantMatcher(t, kind)})
				}
			}
		}
	}
	out = append(out, s.proxySettingSelections(id, kind)...)
	return out
}
