package resourceproxy

import (
	"fmt"
	"sort"
	"strings"
)

// Reasons of the Ready condition when a proxy does not work.
const (
	ReasonReady           = "Ready"
	ReasonInvalid         = "Invalid"
	ReasonBuiltinGroup    = "BuiltinGroup"
	ReasonConflict        = "Conflict"
	ReasonWildcardOverlap = "WildcardOverlap"
	ReasonTargetIsClient  = "TargetIsClient"
	ReasonSecretForbidden = "SecretForbidden"
	ReasonSecretInvalid   = "SecretInvalid"
	ReasonAPIServiceError = "APIServiceError"
	// ReasonTargetAddressRefused: the provider's target policy refuses the
	// external target's server or peer addresses (targetpolicy).
	ReasonTargetAddressRefused = "TargetAddressRefused"
)

// The messages of TargetAddressRefused. They never name the address, the
// rule or anything learnt by dialling: a refusal happens before any dial,
// and its status reads the same whatever listens at the address (the
// operator's log has the detail).
const (
	policyHint       = "loopback, link-local (cloud metadata included), unspecified, multicast and the hub host's own addresses are never dialled unless the hub operator allows them (targetPolicy in the resource-proxy provider config)"
	msgServerRefused = "the kubeconfig's server address is refused by the provider's target policy: " + policyHint
	msgPeersRefused  = "every peer address in the target's default/kubernetes EndpointSlice is refused by the provider's target policy: " + policyHint
)

// problem is why a ResourceProxy is refused.
type problem struct{ reason, message string }

func (p *problem) Error() string { return p.reason + ": " + p.message }

// builtinGroup reports groups that belong to the hub or to providers: the
// core group, *.k8s.io, *.kubernetes.io and *.wharf.dev (the hub's
// CatalogEntry rule), and dotless names. The CRD refuses them by CEL too;
// this is the check for objects stored before that rule.
func builtinGroup(g string) bool {
	return g == "" || g == "k8s.io" || strings.HasSuffix(g, ".k8s.io") || strings.HasSuffix(g, ".kubernetes.io") ||
		g == "wharf.dev" || strings.HasSuffix(g, ".wharf.dev") || !strings.Contains(g, ".")
}

// validateOne checks what one object can get wrong on its own. client is
// the logical cluster id of the client workspace; clientPath its path when
// known ("" otherwise).
func validateOne(rp *ResourceProxy, client, clientPath string) *problem {
	t := rp.Spec.Target
	if (t.Workspace == "") == (t.External == nil) {
		return &problem{ReasonInvalid, "set exactly one of spec.target.workspace and spec.target.external"}
	}
	if t.Workspace != "" && (t.Workspace == client || (clientPath != "" && t.Workspace == clientPath)) {
		return &problem{ReasonTargetIsClient, fmt.Sprintf("target workspace %q is the client workspace itself", t.Workspace)}
	}
	if t.External != nil && (t.External.SecretRef.Namespace == "" || t.External.SecretRef.Name == "") {
		return &problem{ReasonInvalid, "spec.target.external.secretRef needs namespace and name"}
	}
	if m := rp.Spec.AccessMode; m != "" && m != AccessOwned && m != AccessAll {
		return &problem{ReasonInvalid, fmt.Sprintf("accessMode %q: want owned or all", m)}
	}
	if len(rp.Spec.Resources) == 0 {
		return &problem{ReasonInvalid, "spec.resources is empty"}
	}
	wild, explicit := map[string]bool{}, map[string]bool{}
	for _, e := range rp.Spec.Resources {
		if e.Group == "" || e.Version == "" || e.Resource == "" {
			return &problem{ReasonInvalid, "every resource entry needs group, version and resource"}
		}
		if builtinGroup(e.Group) {
			return &problem{ReasonBuiltinGroup, fmt.Sprintf("group %q is built in or belongs to a provider", e.Group)}
		}
		if e.Resource == "*" {
			wild[e.GroupVersion()] = true
		} else {
			explicit[e.GroupVersion()] = true
		}
	}
	for gv := range wild {
		if explicit[gv] {
			return &problem{ReasonWildcardOverlap, fmt.Sprintf("a * entry and an explicit entry overlap for %s", gv)}
		}
	}
	return nil
}

// older orders proxies for conflict resolution: the first created wins, so
// every replica picks the same winner.
func older(a, b *ResourceProxy) bool {
	ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return a.Name < b.Name
}

// plan computes a cluster's routes from its proxies: per group/version the
// route of the oldest valid proxy; later proxies that disagree on target or
// access mode, or that mix * and explicit entries with it, get a problem.
func plan(proxies []*ResourceProxy, client, clientPath string) (map[string]*Route, map[string]*problem) {
	sort.Slice(proxies, func(i, j int) bool { return older(proxies[i], proxies[j]) })
	routes := map[string]*Route{}
	problems := map[string]*problem{}
	for _, rp := range proxies {
		if rp.DeletionTimestamp != nil {
			continue
		}
		if p := validateOne(rp, client, clientPath); p != nil {
			problems[rp.Name] = p
			continue
		}
		if p := conflicts(rp, routes); p != nil {
			problems[rp.Name] = p
			continue
		}
		for _, e := range rp.Spec.Resources {
			r := routes[e.GroupVersion()]
			if r == nil {
				r = &Route{Cluster: client, Group: e.Group, Version: e.Version, Target: rp.Spec.Target, Mode: rp.Spec.Mode(), Proxy: rp.Name}
				routes[e.GroupVersion()] = r
			}
			if e.Resource == "*" {
				r.Wildcard = true
			} else if !contains(r.Resources, e.Resource) {
				r.Resources = append(r.Resources, e.Resource)
			}
		}
	}
	for _, r := range routes {
		sort.Strings(r.Resources)
	}
	return routes, problems
}

// conflicts checks rp against the routes of older proxies.
func conflicts(rp *ResourceProxy, routes map[string]*Route) *problem {
	for _, e := range rp.Spec.Resources {
		r := routes[e.GroupVersion()]
		if r == nil {
			continue
		}
		if r.Target.Key() != rp.Spec.Target.Key() || r.Mode != rp.Spec.Mode() {
			return &problem{ReasonConflict, fmt.Sprintf("%s is already routed by resourceproxy %q with another target or access mode", e.GroupVersion(), r.Proxy)}
		}
		if (e.Resource == "*") != r.Wildcard || (e.Resource == "*" && len(r.Resources) > 0) {
			return &problem{ReasonWildcardOverlap, fmt.Sprintf("a * entry and an explicit entry overlap for %s (resourceproxy %q)", e.GroupVersion(), r.Proxy)}
		}
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
