package rules

import "slices"

// proxySettingSelections: a ProxySetting in a tenant namespace hands the
// tenant's class grants to its subjects. The operations it may give on a
// kind are capped by those the tenant's owners hold on that kind, and the
// objects are the tenant's own selection, so whoever can write a
// ProxySetting (a namespace admin, or an owner) can never obtain more than
// the tenant was given. A ProxySetting outside a tenant namespace is ignored,
// and so is one ValidateProxySetting refuses (the status controller reports
// it Ready=False): none of its entries grants.
func (s *Snapshot) proxySettingSelections(id Identity, kind string) []legacySelection {
	var out []legacySelection
	for _, ps := range s.ProxySettings {
		t, ok := s.tenantOf(ps.Namespace)
		if !ok {
			continue
		}
		if ValidateProxySetting(ps, s.Discovered) != nil {
			continue
		}
		capOps := ownerOps(t, kind)
		if len(capOps) == 0 {
			continue
		}
		for _, subj := range ps.Subjects {
			if !id.Matches(subj.Subject) {
				continue
			}
			for _, g := range subj.ProxySettings {
				if g.Kind != kind {
					continue
				}
				var ops []string
				for _, op := range g.Operations {
					if slices.Contains(capOps, op) {
						ops = append(ops, op)
					}
				}
				if v := legacyVerbs(ops); len(v) > 0 {
					out = append(out, legacySelection{
						tenant: t.Name,
						source: "ProxySetting " + ps.Namespace + "/" + ps.Name,
						verbs:  v,
						match:  s.tenantMatcher(t, kind),
					})
				}
			}
		}
	}
	return out
}
