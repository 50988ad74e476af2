package resourcequota

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/wharfhub/wharf/hub/cluster"
)

// PluginName is the admission plugin's name.
const PluginName = "WharfResourceQuota"

// maxAttempts bounds the compare-and-swap retries of one create, as
// kube's quota evaluator retries a conflicting status write.
const maxAttempts = 5

// Quotas is the ResourceQuota storage: the main store to list a
// namespace's quotas and the status store to write used back.
type Quotas struct {
	List   rest.Lister
	Status rest.Updater
}

// Admission charges every namespaced create against its namespace's
// ResourceQuotas (see the package doc).
type Admission struct {
	*admission.Handler
	Counter *Counter
	quotas  atomic.Pointer[Quotas]
}

var _ admission.ValidationInterface = &Admission{}

// NewAdmission returns the plugin; it admits everything until SetQuotas.
func NewAdmission(c *Counter) *Admission {
	return &Admission{Handler: admission.NewHandler(admission.Create), Counter: c}
}

// SetQuotas hands the plugin the ResourceQuota storage, which exists only
// after the admission chain is built.
func (a *Admission) SetQuotas(q Quotas) { a.quotas.Store(&q) }

// Validate implements admission.ValidationInterface.
func (a *Admission) Validate(ctx context.Context, attrs admission.Attributes, _ admission.ObjectInterfaces) error {
	if attrs.GetOperation() != admission.Create || attrs.GetNamespace() == "" || attrs.GetSubresource() != "" {
		return nil
	}
	q := a.quotas.Load()
	if q == nil {
		return nil
	}
	id, ok := cluster.From(ctx)
	if !ok || id == "" {
		return nil
	}
	ctx = request.WithNamespace(ctx, attrs.GetNamespace())
	names := NamesOf(attrs.GetResource().GroupResource())
	for attempt := 1; ; attempt++ {
		quotas, err := a.list(ctx, q, attempt == 1)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("listing resource quotas: %w", err))
		}
		if err := a.fillUsed(ctx, id, attrs.GetNamespace(), quotas, names); err != nil {
			return apierrors.NewInternalError(err)
		}
		changed, err := Charge(quotas, names)
		var ex *Exceeded
		if errors.As(err, &ex) {
			return admission.NewForbidden(attrs, ex)
		}
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		if attrs.IsDryRun() || len(changed) == 0 {
			return nil
		}
		err = a.write(ctx, q, changed)
		if err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) || attempt == maxAttempts {
			return apierrors.NewInternalError(fmt.Errorf("updating resource quota status: %w", err))
		}
	}
}

// list reads the namespace's quotas: first from the watch cache, which
// costs no etcd round trip on the many creates of namespaces without
// quotas (a quota a moment old may be missed, as by kube's informer);
// after a conflict consistently, as the cache may lag the write that won.
func (a *Admission) list(ctx context.Context, q *Quotas, cached bool) ([]*corev1.ResourceQuota, error) {
	opts := &metainternalversion.ListOptions{}
	if cached {
		opts.ResourceVersion = "0"
	}
	obj, err := q.List.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	l, ok := obj.(*corev1.ResourceQuotaList)
	if !ok {
		return nil, fmt.Errorf("unexpected %T", obj)
	}
	out := make([]*corev1.ResourceQuota, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, &l.Items[i])
	}
	return out, nil
}

// fillUsed counts what a quota has no used value for yet (a quota just
// created), where kube refuses until its controller has counted.
func (a *Admission) fillUsed(ctx context.Context, id cluster.ID, namespace string, quotas []*corev1.ResourceQuota, names []corev1.ResourceName) error {
	for _, q := range quotas {
		for _, n := range names {
			if _, hard := q.Status.Hard[n]; !hard {
				continue
			}
			if _, used := q.Status.Used[n]; used {
				continue
			}
			gr, _ := ResourceOf(n)
			c, err := a.Counter.Count(ctx, id, namespace, gr)
			if err != nil {
				return err
			}
			if q.Status.Used == nil {
				q.Status.Used = corev1.ResourceList{}
			}
			q.Status.Used[n] = *resourceCount(c)
		}
	}
	return nil
}

// write stores the raised used values, each conditional on the quota's
// resourceVersion as listed.
func (a *Admission) write(ctx context.Context, q *Quotas, changed []*corev1.ResourceQuota) error {
	for _, rq := range changed {
		_, _, err := q.Status.Update(ctx, rq.Name, rest.DefaultUpdatedObjectInfo(rq), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		if err != nil {
			return err
		}
	}
	return nil
}
