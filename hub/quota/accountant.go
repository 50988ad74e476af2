package quota

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
)

// Resolver says which tenant a cluster belongs to and what bounds apply.
type Resolver interface {
	// Limits returns the cluster's tenant (fairness' "tree:<path>") and
	// the ceilings of the cluster and of that tenant.
	Limits(ctx context.Context, id cluster.ID) (tenant string, ws, ten Limits, err error)
}

// Accountant counts every per-workspace write in the Ledger and refuses
// the growing ones past a ceiling (see the package doc).
type Accountant struct {
	Ledger   *Ledger
	Resolver Resolver
	// IsAdmin reports hub administrators (system:masters included), who
	// are counted but never refused.
	IsAdmin func(user.Info) bool
	// Writes paces each tenant's writes (nil: not paced).
	Writes *WriteRate

	// stores holds each counted resource's store (Wrap), by
	// schema.GroupResource, for admission to measure writes with.
	stores sync.Map
}

type exemptKey struct{}

// WithExempt marks ctx as the hub's own work: counted, never refused.
func WithExempt(ctx context.Context) context.Context {
	return context.WithValue(ctx, exemptKey{}, true)
}

// workspacesResource is the resource whose objects count as workspaces.
var workspacesResource = schema.GroupResource{Group: "tenancy.wharf.dev", Resource: "workspaces"}

// enforced says whether a storage call of op ("create" or "update") on gr
// is the write the request asked for, by a caller the hub may refuse.
// Side effects of an admitted request (a workspace's initial namespaces
// and bindings, its Ready condition) and the hub's controllers are
// counted but not refused: refusing them would leave half-made state.
func (a *Accountant) enforced(ctx context.Context, gr schema.GroupResource, op string) bool {
	if !tenantCaller(ctx, a.IsAdmin) {
		return false
	}
	info, ok := requestOn(ctx, gr)
	if !ok {
		return false
	}
	switch info.Verb {
	case "create":
		return op == "create"
	case "update", "patch":
		// Server-side apply and create-on-update may create.
		return true
	}
	return false
}

// tenantCaller reports whether ctx is a request of a user the hub may
// refuse or pace: not the hub's own work (WithExempt, no user,
// system:masters) nor a hub administrator (isAdmin may be nil).
func tenantCaller(ctx context.Context, isAdmin func(user.Info) bool) bool {
	if v, _ := ctx.Value(exemptKey{}).(bool); v {
		return false
	}
	u, ok := request.UserFrom(ctx)
	return ok && !hubUser(u, isAdmin)
}

// hubUser reports whether u is the hub or one of its administrators
// (system:masters, or isAdmin, which may be nil); no user counts as the
// hub's own work.
func hubUser(u user.Info, isAdmin func(user.Info) bool) bool {
	if u == nil {
		return true
	}
	for _, g := range u.GetGroups() {
		if g == user.SystemPrivilegedGroup {
			return true
		}
	}
	return isAdmin != nil && isAdmin(u)
}

// requestOn is ctx's request when it names resource gr: a storage call
// on gr is then that request's own, not a side effect of it.
func requestOn(ctx context.Context, gr schema.GroupResource) (*request.RequestInfo, bool) {
	info, ok := request.RequestInfoFrom(ctx)
	if !ok || !info.IsResourceRequest || info.APIGroup != gr.Group || info.Resource != gr.Resource {
		return nil, false
	}
	return info, true
}

// reserve records d for the cluster in ctx. Refusals are 403 Forbidden
// worded as kube's ResourceQuota admission words them.
func (a *Accountant) reserve(ctx context.Context, gr schema.GroupResource, name string, id cluster.ID, d Usage, enforce bool) error {
	if d.IsZero() {
		return nil
	}
	tenant, ws, ten, err := a.Resolver.Limits(ctx, id)
	if err != nil {
		if !enforce {
			// Counting must not fail the hub's own writes; the
			// reconciler will count what this one stores.
			klog.V(2).InfoS("Not counting a write: its workspace is not resolved", "cluster", id, "err", err)
			return nil
		}
		return apierrors.NewInternalError(fmt.Errorf("resolving the quota of workspace %s: %w", id, err))
	}
	err = a.Ledger.apply(&change{cluster: id, tenant: tenant, delta: d, enforce: enforce, ws: ws, ten: ten})
	if err != nil && !enforce {
		klog.ErrorS(err, "Counting a hub write failed; the reconciler will correct it", "cluster", id, "resource", gr)
		return nil
	}
	return answer(gr, name, err)
}

// check answers a dry run of a write that would change usage by d as the
// write would be answered, recording nothing (kube's ResourceQuota
// admission checks dry runs without charging them).
func (a *Accountant) check(ctx context.Context, gr schema.GroupResource, name string, id cluster.ID, d Usage) error {
	tenant, ws, ten, err := a.Resolver.Limits(ctx, id)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("resolving the quota of workspace %s: %w", id, err))
	}
	return answer(gr, name, a.Ledger.check(ctx, &change{cluster: id, tenant: tenant, delta: d, enforce: true, ws: ws, ten: ten}))
}

// answer is the API error of a ledger outcome: a refusal is 403 Forbidden
// worded as kube's ResourceQuota admission words it.
func answer(gr schema.GroupResource, name string, err error) error {
	var ex *Exceeded
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ex):
		return apierrors.NewForbidden(gr, name, ex)
	default:
		return apierrors.NewInternalError(err)
	}
}

// release gives d back (a failed write, a delete, a shrinking update).
// It never fails the caller: a lost release is drift the reconciler
// corrects.
func (a *Accountant) release(ctx context.Context, id cluster.ID, d Usage) {
	if d.IsZero() {
		return
	}
	tenant, _, _, err := a.Resolver.Limits(context.WithoutCancel(ctx), id)
	if err != nil {
		klog.V(2).InfoS("Not releasing usage: the workspace is not resolved", "cluster", id, "err", err)
		return
	}
	if err := a.Ledger.apply(&change{cluster: id, tenant: tenant, delta: d.Neg()}); err != nil {
		klog.ErrorS(err, "Releasing usage failed; the reconciler will correct it", "cluster", id)
	}
}
