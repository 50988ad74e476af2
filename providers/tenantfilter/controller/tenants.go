package controller

import (
	"context"
	"fmt"
	"reflect"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
)

func everything() labels.Selector { return labels.Everything() }

// namespaceTenants names the tenants a namespace points at: by either
// tenant label, or by an ownerReference to a capsule.clastix.io Tenant (any
// version: Capsule has written v1beta1 and v1beta2 references).
func namespaceTenants(ns *corev1.Namespace) []string {
	var out []string
	add := func(n string) {
		if n == "" {
			return
		}
		for _, o := range out {
			if o == n {
				return
			}
		}
		out = append(out, n)
	}
	add(ns.Labels[capsulev1beta2.TenantLabel])
	add(ns.Labels[capsulev1beta2.ProjectTenantLabel])
	for _, r := range ns.OwnerReferences {
		if isTenantRef(r) {
			add(r.Name)
		}
	}
	return out
}

func isTenantRef(r metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	return err == nil && gv.Group == capsulev1beta2.GroupName && r.Kind == "Tenant"
}

// belongsTo reports whether ns belongs to the tenant name/uid. A label is
// enough; an ownerReference must also carry the tenant's UID, so a
// reference left over from a deleted tenant of the same name does not
// count.
func belongsTo(ns *corev1.Namespace, name string, uid types.UID) bool {
	if ns.Labels[capsulev1beta2.TenantLabel] == name || ns.Labels[capsulev1beta2.ProjectTenantLabel] == name {
		return true
	}
	for _, r := range ns.OwnerReferences {
		if isTenantRef(r) && r.Name == name && (r.UID == "" || r.UID == uid) {
			return true
		}
	}
	return false
}

const tenantIndex = "tenant"

func indexByTenant(o any) ([]string, error) {
	ns, ok := o.(*corev1.Namespace)
	if !ok {
		return nil, nil
	}
	return namespaceTenants(ns), nil
}

// tenantNamespaces lists the namespaces of a tenant, sorted.
func (c *Controller) tenantNamespaces(name string, uid types.UID) ([]string, error) {
	objs, err := c.nsIndexer.ByIndex(tenantIndex, name)
	if err != nil {
		return nil, fmt.Errorf("namespaces of tenant %s: %w", name, err)
	}
	var out []string
	for _, o := range objs {
		if ns, ok := o.(*corev1.Namespace); ok && belongsTo(ns, name, uid) {
			out = append(out, ns.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// syncTenant writes status.namespaces, status.size and status.state.
func (c *Controller) syncTenant(ctx context.Context, name string) error {
	obj, err := c.tenants.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	u := obj.(*unstructured.Unstructured)
	var tnt capsulev1beta2.Tenant
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &tnt); err != nil {
		return fmt.Errorf("decode tenant %s: %w", name, err)
	}
	nss, err := c.tenantNamespaces(name, tnt.UID)
	if err != nil {
		return err
	}
	state := capsulev1beta2.TenantStateActive
	if tnt.Spec.Cordoned {
		state = capsulev1beta2.TenantStateCordoned
	}
	haveNS := tnt.Status.Namespaces
	if len(haveNS) == 0 {
		haveNS = nil
	}
	if reflect.DeepEqual(haveNS, nss) && tnt.Status.Size == uint(len(nss)) && tnt.Status.State == state {
		return nil
	}
	upd := u.DeepCopy()
	if len(nss) == 0 {
		unstructured.RemoveNestedField(upd.Object, "status", "namespaces")
	} else if err := unstructured.SetNestedStringSlice(upd.Object, nss, "status", "namespaces"); err != nil {
		return err
	}
	if err := unstructured.SetNestedField(upd.Object, int64(len(nss)), "status", "size"); err != nil {
		return err
	}
	if err := unstructured.SetNestedField(upd.Object, string(state), "status", "state"); err != nil {
		return err
	}
	if _, err := c.dyn.Resource(capsulev1beta2.TenantsGVR).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("tenant %s status: %w", name, err)
	}
	return nil
}

// syncConfiguration writes status.users (the spec's users merged as
// Capsule merges them) and status.observedGeneration.
func (c *Controller) syncConfiguration(ctx context.Context, name string) error {
	obj, err := c.configs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	u := obj.(*unstructured.Unstructured)
	var cfg capsulev1beta2.CapsuleConfiguration
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cfg); err != nil {
		return fmt.Errorf("decode CapsuleConfiguration %s: %w", name, err)
	}
	want := cfg.Spec.MergedUsers()
	have := cfg.Status.Users
	if len(have) == 0 {
		have = nil
	}
	if reflect.DeepEqual(have, want) && cfg.Status.ObservedGeneration == cfg.Generation {
		return nil
	}
	upd := u.DeepCopy()
	if len(want) == 0 {
		unstructured.RemoveNestedField(upd.Object, "status", "users")
	} else {
		list := make([]any, 0, len(want))
		for _, w := range want {
			list = append(list, map[string]any{"kind": string(w.Kind), "name": w.Name})
		}
		if err := unstructured.SetNestedSlice(upd.Object, list, "status", "users"); err != nil {
			return err
		}
	}
	if err := unstructured.SetNestedField(upd.Object, cfg.Generation, "status", "observedGeneration"); err != nil {
		return err
	}
	if _, err := c.dyn.Resource(capsulev1beta2.CapsuleConfigurationsGVR).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("CapsuleConfiguration %s status: %w", name, err)
	}
	return nil
}
