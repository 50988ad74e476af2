package resourceproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
)

// reconcile brings one client cluster in step: routes, APIServices, status
// and finalizers.
func (c *Controller) reconcile(ctx context.Context, cluster string) error {
	objs, err := c.informer.Lister().List(cluster, nil)
	if err != nil {
		return err
	}
	var proxies []*ResourceProxy
	for _, o := range objs {
		rp, err := FromUnstructured(o.(*unstructured.Unstructured))
		if err != nil {
			klog.ErrorS(err, "resource proxy: undecodable object", "cluster", cluster)
			continue
		}
		proxies = append(proxies, rp)
	}
	dyn, err := c.clients.For(cluster)
	if err != nil {
		return err
	}
	routes, problems := plan(proxies, cluster, c.routes.Path(cluster))
	// An external target whose Secret the provider may not read, or whose
	// addresses the target policy refuses, does not route: its requests
	// could only fail.
	for gv, r := range routes {
		if r.Target.External == nil {
			continue
		}
		conn, err := c.targets.Get(ctx, r)
		var se *errSecret
		switch {
		case errors.As(err, &se):
			problems[r.Proxy] = &problem{se.reason, se.msg}
			delete(routes, gv)
		case err == nil:
			if p := conn.refusal(); p != nil {
				problems[r.Proxy] = p
				delete(routes, gv)
			}
		}
	}
	for gv, r := range routes {
		if problems[r.Proxy] != nil {
			delete(routes, gv)
		}
	}
	c.routes.Set(cluster, routes)
	apiErr := c.syncAPIServices(ctx, dyn, routes)
	var errs []error
	if apiErr != nil {
		errs = append(errs, apiErr)
	}
	for _, rp := range proxies {
		if err := c.writeStatus(ctx, dyn, rp, routes, problems[rp.Name], apiErr); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// apiServiceName is <version>.<group>, as on kube-apiserver.
func apiServiceName(r *Route) string { return r.Version + "." + r.Group }

func desiredAPIService(r *Route) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata": map[string]any{
			"name":   apiServiceName(r),
			"labels": map[string]any{ProtectedLabel: ProviderName},
		},
		"spec": map[string]any{
			"group":                r.Group,
			"version":              r.Version,
			"service":              map[string]any{"namespace": ProvidersNamespace, "name": ProviderName},
			"groupPriorityMinimum": int64(1000),
			"versionPriority":      int64(15),
		},
	}}
}

// syncAPIServices creates and updates the APIServices of routes, and
// deletes this provider's APIServices (by label and spec.service) that no
// route wants any more.
func (c *Controller) syncAPIServices(ctx context.Context, dyn dynamic.Interface, routes map[string]*Route) error {
	api := dyn.Resource(APIServiceGVR)
	list, err := api.List(ctx, metav1.ListOptions{LabelSelector: ProtectedLabel + "=" + ProviderName})
	if err != nil {
		return fmt.Errorf("list apiservices: %w", err)
	}
	want := map[string]*unstructured.Unstructured{}
	for _, r := range routes {
		want[apiServiceName(r)] = desiredAPIService(r)
	}
	var errs []error
	for i := range list.Items {
		cur := &list.Items[i]
		svc, _, _ := unstructured.NestedString(cur.Object, "spec", "service", "name")
		d, ok := want[cur.GetName()]
		if !ok {
			if svc != ProviderName {
				continue
			}
			if err := api.Delete(ctx, cur.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete apiservice %s: %w", cur.GetName(), err))
			}
			continue
		}
		delete(want, cur.GetName())
		curSpec, _, _ := unstructured.NestedMap(cur.Object, "spec")
		dSpec, _, _ := unstructured.NestedMap(d.Object, "spec")
		if specCovers(curSpec, dSpec) && cur.GetLabels()[ProtectedLabel] == ProviderName {
			continue
		}
		u := cur.DeepCopy()
		for k, v := range dSpec {
			_ = unstructured.SetNestedField(u.Object, v, "spec", k)
		}
		l := u.GetLabels()
		l[ProtectedLabel] = ProviderName
		u.SetLabels(l)
		if _, err := api.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("update apiservice %s: %w", u.GetName(), err))
		}
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := api.Create(ctx, want[n], metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("create apiservice %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

func specCovers(cur, want map[string]any) bool {
	for k, v := range want {
		if !equality.Semantic.DeepEqual(cur[k], v) {
			return false
		}
	}
	return true
}

// writeStatus sets Ready and the APIServices of one proxy, and its
// finalizer: added while it lives, removed once its routes are gone.
func (c *Controller) writeStatus(ctx context.Context, dyn dynamic.Interface, rp *ResourceProxy, routes map[string]*Route, p *problem, apiErr error) error {
	api := dyn.Resource(GVR)
	if rp.DeletionTimestamp != nil {
		if apiErr != nil || !hasFinalizer(rp) {
			return nil
		}
		return c.setFinalizer(ctx, api, rp, false)
	}
	if !hasFinalizer(rp) {
		if err := c.setFinalizer(ctx, api, rp, true); err != nil {
			return err
		}
	}
	st := Status{ObservedGeneration: rp.Generation, Conditions: append([]metav1.Condition(nil), rp.Status.Conditions...)}
	cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: ReasonReady, ObservedGeneration: rp.Generation}
	for _, r := range routes {
		if r.Proxy == rp.Name {
			st.APIServices = append(st.APIServices, apiServiceName(r))
		}
	}
	sort.Strings(st.APIServices)
	st.APIServices = dedupe(st.APIServices)
	switch {
	case p != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, p.reason, p.message
		st.APIServices = nil
	case apiErr != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonAPIServiceError, "writing APIServices failed; retrying"
	default:
		cond.Message = fmt.Sprintf("routing %v to %s", st.APIServices, rp.Spec.Target.Name())
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	if equality.Semantic.DeepEqual(st, rp.Status) {
		return nil
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": Group + "/" + Version, "kind": Kind,
		"metadata": map[string]any{"name": rp.Name, "resourceVersion": rp.ResourceVersion}, "status": raw}}
	if _, err := api.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("status of resourceproxy %s: %w", rp.Name, err)
	}
	return nil
}

func hasFinalizer(rp *ResourceProxy) bool { return contains(rp.Finalizers, Finalizer) }

func (c *Controller) setFinalizer(ctx context.Context, api dynamic.NamespaceableResourceInterface, rp *ResourceProxy, add bool) error {
	var fin []string
	for _, f := range rp.Finalizers {
		if f != Finalizer {
			fin = append(fin, f)
		}
	}
	if add {
		fin = append(fin, Finalizer)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": fin, "resourceVersion": rp.ResourceVersion}})
	if err != nil {
		return err
	}
	if _, err := api.Patch(ctx, rp.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("finalizer of resourceproxy %s: %w", rp.Name, err)
	}
	return nil
}

func dedupe(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || s[i-1] != x {
			out = append(out, x)
		}
	}
	return out
}
