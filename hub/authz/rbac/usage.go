package rbac

import rbacv1 "k8s.io/api/rbac/v1"

// Usage is what a workspace's RBAC objects cost the hub, as the RBAC quota
// counts it: the rules stored in its Roles and ClusterRoles (an aggregated
// role's own .rules included: they are stored, though they grant nothing)
// and the number of ClusterRoles carrying an aggregationRule.
type Usage struct {
	Rules      int
	Aggregated int
}

func (u *Usage) add(d Usage) { u.Rules += d.Rules; u.Aggregated += d.Aggregated }
func (u *Usage) sub(d Usage) { u.Rules -= d.Rules; u.Aggregated -= d.Aggregated }

// UsageOfClusterRole is what one ClusterRole counts against the quota.
func UsageOfClusterRole(r *rbacv1.ClusterRole) Usage {
	u := Usage{Rules: len(r.Rules)}
	if r.AggregationRule != nil {
		u.Aggregated = 1
	}
	return u
}

// UsageOfRole is what one Role counts against the quota.
func UsageOfRole(r *rbacv1.Role) Usage { return Usage{Rules: len(r.Rules)} }
