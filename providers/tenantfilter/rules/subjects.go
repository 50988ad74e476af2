package rules

import "slices"

// Matches reports whether the identity is the subject. Users and
// ServiceAccounts compare by username (a ServiceAccount subject must carry
// the system:serviceaccount: prefix, so a User named like a ServiceAccount
// and a ServiceAccount subject cannot be confused across kinds); groups by
// membership.
func (id Identity) Matches(s Subject) bool {
	switch s.Kind {
	case KindUser:
		return s.Name != "" && s.Name == id.User
	case KindServiceAccount:
		return isServiceAccount(s.Name) && s.Name == id.User
	case KindGroup:
		return s.Name != "" && slices.Contains(id.Groups, s.Name)
	}
	return false
}

// MatchesAny reports whether the identity is any of the subjects.
func (id Identity) MatchesAny(subjects []Subject) bool {
	for _, s := range subjects {
		if id.Matches(s) {
			return true
		}
	}
	return false
}

const saPrefix = "system:serviceaccount:"

func isServiceAccount(user string) bool {
	return len(user) > len(saPrefix) && user[:len(saPrefix)] == saPrefix
}

// OwnedTenants lists the tenants (in snapshot order) the identity owns.
func (s *Snapshot) OwnedTenants(id Identity) []*Tenant {
	var out []*Tenant
	for i := range s.Tenants {
		t := &s.Tenants[i]
		for _, o := range t.Owners {
			if id.Matches(o.Subject) {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// tenantOf returns the tenant owning namespace ns, if any.
func (s *Snapshot) tenantOf(ns string) (*Tenant, bool) {
	if s.NamespaceTenant != nil {
		name, ok := s.NamespaceTenant(ns)
		if !ok {
			return nil, false
		}
		for i := range s.Tenants {
			if s.Tenants[i].Name == name {
				return &s.Tenants[i], true
			}
		}
		return nil, false
	}
	for i := range s.Tenants {
		if slices.Contains(s.Namespaces[s.Tenants[i].Name], ns) {
			return &s.Tenants[i], true
		}
	}
	return nil, false
}

// namespacesOf lists a tenant's namespaces.
func (s *Snapshot) namespacesOf(tenant string) []string {
	if s.TenantNamespaces != nil {
		return s.TenantNamespaces(tenant)
	}
	return s.Namespaces[tenant]
}
