package v1beta2

import "sort"

// MergedUsers is the list Capsule publishes as status.users: spec.users plus
// the deprecated spec.userNames (as Users) and spec.userGroups (as Groups),
// without duplicates or empty names, sorted by kind then name so that the
// result is stable and a status write happens only on a real change.
func (s *CapsuleConfigurationSpec) MergedUsers() []UserSpec {
	seen := map[UserSpec]bool{}
	var out []UserSpec
	add := func(u UserSpec) {
		if u.Name == "" || u.Kind == "" || seen[u] {
			return
		}
		seen[u] = true
		out = append(out, u)
	}
	for _, u := range s.Users {
		add(u)
	}
	for _, n := range s.UserNames {
		add(UserSpec{Kind: UserOwner, Name: n})
	}
	for _, g := range s.UserGroups {
		add(UserSpec{Kind: GroupOwner, Name: g})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}
