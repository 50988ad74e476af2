package fairness

import (
	"context"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/home"
)

// Unconfined is the tenant of confined identities whose workspace is
// unknown or ambiguous: they are denied everywhere, so they share one
// tenant rather than each getting a share of their own.
const Unconfined = "confined:unknown"

// Keyer names the tenant of a caller (see the package doc).
type Keyer struct {
	// IsAdmin reports hub administrators, who are exempt.
	IsAdmin func(user.Info) bool
	// PathOf resolves a logical cluster to its workspace path.
	PathOf func(context.Context, cluster.ID) (cluster.Path, error)
	// Prepare, if set, runs for every counted request before it takes
	// seats. The hub resolves the request's workspace there, so that one
	// not in memory is read from etcd while the request holds no seat:
	// otherwise requests to a missing workspace held their seats longer
	// than requests to an existing one the caller may not see, and the
	// share of 429s told them apart (outside attack review, row 3).
	Prepare func(context.Context)
}

// Tenant returns the tenant u counts against, or exempt for hub
// administrators and system:masters.
func (k Keyer) Tenant(ctx context.Context, u user.Info) (tenant string, exempt bool) {
	if u == nil {
		return "user:", false
	}
	// Confinement first: an identity confined to a workspace counts against
	// its tree whatever name or groups it carries, so that an impersonated
	// name is never exempt (the authorizer refuses to impersonate hub
	// administrators anyway; this does not depend on it).
	if id, confined := cluster.ConfinedTo(u); confined {
		if id == "" || k.PathOf == nil {
			return Unconfined, false
		}
		p, err := k.PathOf(ctx, id)
		if err != nil || p == "" {
			return Unconfined, false
		}
		return "tree:" + string(TreeOf(p)), false
	}
	for _, g := range u.GetGroups() {
		if g == user.SystemPrivilegedGroup {
			return "", true
		}
	}
	if k.IsAdmin != nil && k.IsAdmin(u) {
		return "", true
	}
	if home.IsPerson(u) {
		// The same key as the person's home tree, so that what she mints
		// there (service accounts, impersonations) shares her share.
		return "tree:" + string(TreeOf(home.PathOf(u.GetName()))), false
	}
	return "user:" + u.GetName(), false
}

// sharedTenant reports a tenant that unrelated callers share: anonymous
// callers, identities without a user, and confined identities whose
// workspace is unknown (all denied, or bounded per address elsewhere).
func sharedTenant(tenant string) bool {
	return tenant == Unconfined || tenant == "user:" || tenant == "user:"+user.Anonymous
}

// TreeOf returns the top of p's workspace tree: root:users:<label> for a
// home and everything below it, root:<label> for every other top-level
// workspace and its descendants, and p itself for root and root:users.
func TreeOf(p cluster.Path) cluster.Path {
	segs := strings.Split(string(p), cluster.Separator)
	users := strings.Split(string(home.UsersPath), cluster.Separator)
	switch {
	case len(segs) > len(users) && strings.Join(segs[:len(users)], cluster.Separator) == string(home.UsersPath):
		return cluster.Path(strings.Join(segs[:len(users)+1], cluster.Separator))
	case len(segs) >= 2:
		return cluster.Path(strings.Join(segs[:2], cluster.Separator))
	default:
		return p
	}
}
