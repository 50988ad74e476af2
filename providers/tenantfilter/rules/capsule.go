package rules

import (
	capsulev1beta1 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta1"
)

// GlobalFromCapsule is the engine's view of a GlobalProxySettings object.
// The core (building a Snapshot) and the status controller (validating)
// both convert with it, so they judge the same entries.
func GlobalFromCapsule(g *capsulev1beta1.GlobalProxySettings) GlobalProxySettings {
	out := GlobalProxySettings{Name: g.Name}
	for _, r := range g.Spec.Rules {
		rr := GlobalRule{}
		for _, s := range r.Subjects {
			rr.Subjects = append(rr.Subjects, Subject{Kind: string(s.Kind), Name: s.Name})
		}
		for _, cr := range r.ClusterResources {
			rr.ClusterResources = append(rr.ClusterResources, ClusterResourceFromCapsule(cr))
		}
		out.Rules = append(out.Rules, rr)
	}
	return out
}

// ClusterResourceFromCapsule is the engine's view of one clusterResources
// entry (of a GlobalProxySettings rule or a ProxySetting subject).
func ClusterResourceFromCapsule(cr capsulev1beta1.ClusterResource) ClusterResource {
	out := ClusterResource{APIGroups: cr.APIGroups, Resources: cr.Resources, Selector: cr.Selector}
	for _, op := range cr.Operations {
		out.Operations = append(out.Operations, string(op))
	}
	return out
}

// ProxySettingFromCapsule is the engine's view of a ProxySetting; the core
// and the status controller both convert with it.
func ProxySettingFromCapsule(p *capsulev1beta1.ProxySetting) ProxySetting {
	out := ProxySetting{Namespace: p.Namespace, Name: p.Name}
	for _, s := range p.Spec.Subjects {
		o := Owner{Subject: Subject{Kind: string(s.Kind), Name: s.Name}}
		for _, ps := range s.ProxyOperations {
			g := KindGrant{Kind: string(ps.Kind)}
			for _, op := range ps.Operations {
				g.Operations = append(g.Operations, string(op))
			}
			o.ProxySettings = append(o.ProxySettings, g)
		}
		for _, cr := range s.ClusterResources {
			o.ClusterResources = append(o.ClusterResources, ClusterResourceFromCapsule(cr))
		}
		out.Subjects = append(out.Subjects, o)
	}
	return out
}
