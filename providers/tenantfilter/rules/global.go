package rules

import (
	"fmt"
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

// ValidateClusterResource checks one clusterResources entry as the spec's
// validation says: operations only List and Get, and a valid selector
// (required). An empty apiGroups or resources list is valid and selects
// nothing. The engine ignores an object with an invalid entry.
func ValidateClusterResource(cr ClusterResource) error {
	if _, err := globalVerbs(cr.Operations); err != nil {
		return err
	}
	if _, err := normalize(cr.Selector); err != nil {
		return err
	}
	return nil
}

// ValidateGlobal validates every entry of a GlobalProxySettings against
// discovery: besides ValidateClusterResource, an entry naming a resource
// explicitly (not "*") must select at least one discovered cluster-scoped
// kind, and every kind it selects must have the get verb. discovered lists
// the cluster-scoped resources.
func ValidateGlobal(g GlobalProxySettings, discovered []Resource) []error {
	var errs []error
	for i, rule := range g.Rules {
		for j, cr := range rule.ClusterResources {
			if err := ValidateClusterResource(cr); err != nil {
				errs = append(errs, fmt.Errorf("spec.rules[%d].clusterResources[%d]: %w", i, j, err))
				continue
			}
			for _, res := range discovered {
				if res.Namespaced || !selects(cr, res) {
					continue
				}
				if !slices.Contains(res.Verbs, "get") {
					errs = append(errs, fmt.Errorf("spec.rules[%d].clusterResources[%d]: %s.%s does not support get", i, j, res.Resource, res.Group))
				}
			}
		}
	}
	return errs
}

// globalValid: every entry of the object passes ValidateClusterResource.
func globalValid(g GlobalProxySettings) bool {
	for _, rule := range g.Rules {
		for _, cr := range rule.ClusterResources {
			if ValidateClusterResource(cr) != nil {
				return false
			}
		}
	}
	return true
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
		if !globalValid(g) {
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
