package rbac

import rbacv1 "k8s.io/api/rbac/v1"

// Usage is what a workspace's RBAC objects cost the hub, as the RBAC quota
// counts it: the rules stored in its Roles and ClusterRoles,
// but those of aggregated ClusterRoles, which only the hub writes (the
// aggregated rules written back, bounded apart: writeback.go), and the
// number of ClusterRoles carrying an aggregationRule.
type Usage struct {
	Rules      int
	Aggregated int
}

func (u *Usage) add(d Usage) { u.Rules += d.Rules; u.Aggregated += d.Aggregated }
func (u *Usage) sub(d Usage) { u.Rules -= d.Rules; u.Aggregated -= d.Aggregated }

// UsageOfClusterRole is what one ClusterRole counts against the quota.
func UsageOfClusterRole(r *rbacv1.ClusterRole) Usage {
	if r.AggregationRule != nil {
		return Usage{Aggregated: 1}
	}
	return Usage{Rules: len(r.Rules)}
}

// UsageOfRole is what one Role counts against the quota.
func UsageOfRole(r *rbacv1.Role) Usage { return Usage{Rules: len(r.Rules)} }
