package cluster

import "context"

type ctxKey int

const (
	clusterKey ctxKey = iota
	wildcardKey
	targetKey
)

// WithCluster returns a context addressed to the logical cluster id.
func WithCluster(ctx context.Context, id ID) context.Context {
	return context.WithValue(ctx, clusterKey, id)
}

// From returns the logical cluster a context is addressed to.
func From(ctx context.Context) (ID, bool) {
	id, ok := ctx.Value(clusterKey).(ID)
	return id, ok && id != ""
}

// WithWildcard marks a context as addressing every logical cluster at once.
// Only list and watch honour it; the request filter admits it for privileged
// identities only.
func WithWildcard(ctx context.Context) context.Context {
	return context.WithValue(ctx, wildcardKey, true)
}

// IsWildcard reports whether a context addresses every logical cluster.
func IsWildcard(ctx context.Context) bool {
	w, _ := ctx.Value(wildcardKey).(bool)
	return w
}

// Target is what a request URL named, before it is resolved to an ID.
type Target struct {
	// Raw is the /clusters/<raw> segment, or "root" when the URL had none.
	Raw string
	// Explicit is true when the URL carried a /clusters/ prefix.
	Explicit bool
}

// WildcardRaw is the /clusters/ segment that addresses every cluster.
const WildcardRaw = "*"

// IsWildcard reports whether the target names every cluster.
func (t Target) IsWildcard() bool { return t.Raw == WildcardRaw }

// WithTarget records the unresolved target of a request.
func WithTarget(ctx context.Context, t Target) context.Context {
	return context.WithValue(ctx, targetKey, t)
}

// TargetFrom returns the unresolved target recorded by WithTarget.
func TargetFrom(ctx context.Context) (Target, bool) {
	t, ok := ctx.Value(targetKey).(Target)
	return t, ok
}
