package rules

import (
	"errors"
	"fmt"
	"slices"
)

// Why a clusterResources entry is invalid. The status controller writes
// these as the reason of a settings object's Ready=False condition, so they
// are part of the objects' API.
const (
	ReasonInvalidOperation     = "InvalidOperation"
	ReasonInvalidSelector      = "InvalidSelector"
	ReasonNamespacedResource   = "NamespacedResource"
	ReasonUnsupportedResource  = "UnsupportedResource"
	ReasonInvalidProxySettings = "InvalidProxySettings"
)

// InvalidEntry is why one clusterResources entry is invalid: a Reason
// above and a message for the object's status (it names the offending
// operation or resource, never an identity).
type InvalidEntry struct {
	Reason  string
	Message string
	Err     error // the underlying error, if any
}

func (e *InvalidEntry) Error() string { return e.Message }

func (e *InvalidEntry) Unwrap() error { return e.Err }

// ReasonOf is the Reason of the InvalidEntry in err's chain, "" if none.
func ReasonOf(err error) string {
	var ie *InvalidEntry
	if errors.As(err, &ie) {
		return ie.Reason
	}
	return ""
}

// ValidateClusterResource checks what one clusterResources entry gets
// wrong on its own, as the spec's validation says: operations only List
// and Get, and a valid selector (required). An empty apiGroups or
// resources list is valid and selects nothing. The error is an
// *InvalidEntry.
func ValidateClusterResource(cr ClusterResource) error {
	if _, err := globalVerbs(cr.Operations); err != nil {
		return err
	}
	if _, err := normalize(cr.Selector); err != nil {
		return err
	}
	return nil
}

// ValidateClusterResourceIn is ValidateClusterResource and the checks
// against discovery (discovered: every served resource, namespaced ones
// included): every resource the entry names explicitly must be
// cluster-scoped and have the get verb wherever its apiGroups patterns
// find it. A "*" entry selects only what qualifies, so it is never
// refused for the kinds it skips; a resource not (yet) discovered is no
// error either: a CRD installed later is checked on re-validation.
func ValidateClusterResourceIn(cr ClusterResource, discovered []Resource) error {
	if err := ValidateClusterResource(cr); err != nil {
		return err
	}
	for _, name := range cr.Resources {
		if name == "*" {
			continue
		}
		for _, d := range discovered {
			if d.Resource != name || !matchAnyGroup(cr.APIGroups, d.Group, d.Version) {
				continue
			}
			gr := d.Resource
			if d.Group != "" {
				gr += "." + d.Group
			}
			if d.Namespaced {
				return &InvalidEntry{Reason: ReasonNamespacedResource,
					Message: fmt.Sprintf("%s (%s) is namespaced; only cluster-scoped resources can be selected", gr, d.Version)}
			}
			if !slices.Contains(d.Verbs, "get") {
				return &InvalidEntry{Reason: ReasonUnsupportedResource, Message: fmt.Sprintf("%s (%s) does not support get", gr, d.Version)}
			}
		}
	}
	return nil
}

// ValidateGlobal validates every entry of a GlobalProxySettings with
// ValidateClusterResourceIn. Each error names its entry
// (rules[i].clusterResources[j]) and wraps the *InvalidEntry.
func ValidateGlobal(g GlobalProxySettings, discovered []Resource) []error {
	var errs []error
	for i, rule := range g.Rules {
		for j, cr := range rule.ClusterResources {
			if err := ValidateClusterResourceIn(cr, discovered); err != nil {
				errs = append(errs, fmt.Errorf("rules[%d].clusterResources[%d]: %w", i, j, err))
			}
		}
	}
	return errs
}

// globalValid: every entry of the object passes ValidateClusterResourceIn
// against discovered, the status controller's own check, so an object it
// reports Ready=False grants nothing (not even its valid entries: their
// author did not mean them on their own). Discovery is the core's, read
// at the time of the request, so the verdict follows CRDs as they come.
func globalValid(g GlobalProxySettings, discovered []Resource) bool {
	for _, rule := range g.Rules {
		for _, cr := range rule.ClusterResources {
			if ValidateClusterResourceIn(cr, discovered) != nil {
				return false
			}
		}
	}
	return true
}

// legacyOps are the operations of a legacy proxySettings entry.
var legacyOps = map[string]bool{OpList: true, OpUpdate: true, OpDelete: true}

// ValidateProxySetting is the one validation of a ProxySetting, the
// status controller's and the engine's: every legacy proxySettings entry
// names a known class kind and only List, Update or Delete, and every
// clusterResources entry passes ValidateClusterResourceIn. It returns the
// first refusal, naming its entry and wrapping an *InvalidEntry.
func ValidateProxySetting(ps ProxySetting, discovered []Resource) error {
	for i, s := range ps.Subjects {
		for j, g := range s.ProxySettings {
			path := fmt.Sprintf("subjects[%d].proxySettings[%d]", i, j)
			if _, ok := legacyKinds[g.Kind]; !ok {
				return &InvalidEntry{Reason: ReasonInvalidProxySettings, Message: fmt.Sprintf("%s: kind %q is not supported", path, g.Kind)}
			}
			for _, op := range g.Operations {
				if !legacyOps[op] {
					return &InvalidEntry{Reason: ReasonInvalidOperation,
						Message: fmt.Sprintf("%s: operation %q is not supported; use List, Update or Delete", path, op)}
				}
			}
		}
		for j, cr := range s.ClusterResources {
			if err := ValidateClusterResourceIn(cr, discovered); err != nil {
				return fmt.Errorf("subjects[%d].clusterResources[%d]: %w", i, j, err)
			}
		}
	}
	return nil
}
