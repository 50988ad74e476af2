package rules

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"
)

// globalSelection is one applicable global clusterResources entry.
type globalSelection struct {
	source   string // GlobalProxySettings name, for logs and reviews
	verbs    verbSet
	norm     normalized
	selector labels.Selector
}

// selects: the entry's apiGroups and resources cover res.
func selects(cr ClusterResource, res Resource) bool {
	return matchAnyGroup(cr.APIGroups, res.Group, res.Version) && matchResource(cr.Resources, res.Resource)
}

// globalAllowed: GlobalProxySettings apply only with ProxyClusterScoped on,
// to tenant users, and to other callers only when --require-capsule-user is
// false.
func globalAllowed(cfg Config, id Identity) bool {
	return cfg.ProxyClusterScoped && (id.TenantUser || !cfg.RequireCapsuleUser)
}

// globalSelections collects the entries of rules naming the caller that
// select res. Only cluster-scoped resources with the get verb are ever
// selected; namespaces are one of them (the namespace core applies the
// Grant to each namespace's labels).
func (s *Snapshot) globalSelections(cfg Config, id Identity, res Resource) []globalSelection {
	if !globalAllowed(cfg, id) || res.Namespaced {
		return nil
	}
	if len(res.Verbs) > 0 && !slices.Contains(res.Verbs, "get") {
		return nil
	}
	var out []globalSelection
	for _, g := range s.Global {
		// An object with an invalid entry is not Ready (the status
		// controller says why) and grants nothing at all, rather than
		// a part its author did not mean on its own.
		if !globalValid(g, s.Discovered) {
			continue
		}
		for _, rule := range g.Rules {
			if !id.MatchesAny(rule.Subjects) {
				continue
			}
			for _, cr := range rule.ClusterResources {
				if !selects(cr, res) {
					continue
				}
				verbs, _ := globalVerbs(cr.Operations)
				norm, _ := normalize(cr.Selector)
				sel, err := norm.selector()
				if err != nil {
					continue
				}
				out = append(out, globalSelection{source: g.Name, verbs: verbs, norm: norm, selector: sel})
			}
		}
	}
	return out
}
