package cluster

import "k8s.io/apiserver/pkg/authentication/user"

// ConfinedExtra is the user-info extra key that confines an identity to
// one logical cluster. Only the hub asserts it: on service-account tokens
// it mints, and on every impersonated identity, naming the workspace in
// which the impersonation was allowed. Clients can never set it: the
// authorizer chain refuses to let anyone impersonate it with any other
// value (hub/server).
const ConfinedExtra = "wharf.dev/cluster"

// ConfinedTo returns the logical cluster u is confined to, and whether u
// is confined at all. A confined identity with several or empty values is
// confined to no cluster: ok is true and id empty, so it is denied
// everywhere.
func ConfinedTo(u user.Info) (id ID, ok bool) {
	if u == nil {
		return "", false
	}
	v, ok := u.GetExtra()[ConfinedExtra]
	if !ok {
		return "", false
	}
	if len(v) != 1 {
		return "", true
	}
	return ID(v[0]), true
}
