package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	capsulev1beta1 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta1"
	"github.com/wharfhub/wharf/providers/tenantfilter/rules"
)

// Ready condition reasons. The reasons of an invalid clusterResources
// entry are the rules package's: the engine and this controller judge
// entries by the same code (rules.ValidateClusterResourceIn).
const (
	ReasonValid                = "Valid"
	ReasonInvalidOperation     = rules.ReasonInvalidOperation
	ReasonUnsupportedResource  = rules.ReasonUnsupportedResource
	ReasonNamespacedResource   = rules.ReasonNamespacedResource
	ReasonInvalidSelector      = rules.ReasonInvalidSelector
	ReasonInvalidProxySettings = rules.ReasonInvalidProxySettings
	ReasonNotInTenant          = "NotInTenantNamespace"
)

// verdict is the outcome of validating one settings object.
type verdict struct {
	ok      bool
	reason  string
	message string
}

func invalid(reason, format string, args ...any) verdict {
	return verdict{reason: reason, message: fmt.Sprintf(format, args...)}
}

// invalidEntry is the verdict on the clusterResources entry at path that
// rules.ValidateClusterResourceIn refused.
func invalidEntry(path string, err error) verdict {
	reason := rules.ReasonOf(err)
	if reason == "" {
		reason = "InvalidSpec" // not reached: every refusal carries its reason
	}
	return invalid(reason, "%s: %v", path, err)
}

// validateGlobal validates a GlobalProxySettings spec against discovery,
// reporting the first invalid entry.
func validateGlobal(spec capsulev1beta1.GlobalProxySettingsSpec, disc []rules.Resource) verdict {
	for i, r := range spec.Rules {
		for j, cr := range r.ClusterResources {
			if err := rules.ValidateClusterResourceIn(rules.ClusterResourceFromCapsule(cr), disc); err != nil {
				return invalidEntry(fmt.Sprintf("rules[%d].clusterResources[%d]", i, j), err)
			}
		}
	}
	return verdict{ok: true, reason: ReasonValid, message: fmt.Sprintf("%d rule(s) valid", len(spec.Rules))}
}

// validateProxySetting validates a ProxySetting with the engine's own
// rules.ValidateProxySetting; tenants are the tenants its namespace belongs
// to (none: valid but grants nothing).
func validateProxySetting(ps rules.ProxySetting, tenants []string, disc []rules.Resource) verdict {
	if err := rules.ValidateProxySetting(ps, disc); err != nil {
		reason := rules.ReasonOf(err)
		if reason == "" {
			reason = "InvalidSpec" // not reached: every refusal carries its reason
		}
		return invalid(reason, "%v", err)
	}
	if len(tenants) == 0 {
		return verdict{ok: true, reason: ReasonNotInTenant,
			message: fmt.Sprintf("namespace %s belongs to no tenant: this ProxySetting grants nothing", ps.Namespace)}
	}
	return verdict{ok: true, reason: ReasonValid,
		message: fmt.Sprintf("applies to tenant %s; it never grants more than the tenant itself has", strings.Join(tenants, ", "))}
}

func (c *Controller) syncGlobal(ctx context.Context, name string) error {
	obj, err := c.globals.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	u := obj.(*unstructured.Unstructured)
	var g capsulev1beta1.GlobalProxySettings
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &g); err != nil {
		return c.writeReady(ctx, capsulev1beta1.GlobalProxySettingsGVR, u, invalid("InvalidSpec", "cannot decode spec: %v", err))
	}
	return c.writeReady(ctx, capsulev1beta1.GlobalProxySettingsGVR, u, validateGlobal(g.Spec, c.disc.resources()))
}

func (c *Controller) syncProxySetting(ctx context.Context, namespace, name string) error {
	obj, err := c.proxySets.ByNamespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	u := obj.(*unstructured.Unstructured)
	var p capsulev1beta1.ProxySetting
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
		return c.writeReady(ctx, capsulev1beta1.ProxySettingsGVR, u, invalid("InvalidSpec", "cannot decode spec: %v", err))
	}
	p.Namespace, p.Name = namespace, name
	return c.writeReady(ctx, capsulev1beta1.ProxySettingsGVR, u, validateProxySetting(rules.ProxySettingFromCapsule(&p), c.existingTenantsOf(namespace), c.disc.resources()))
}

// existingTenantsOf names the existing tenants namespace belongs to.
func (c *Controller) existingTenantsOf(namespace string) []string {
	ns, err := c.nsLister.Get(namespace)
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range namespaceTenants(ns) {
		obj, err := c.tenants.Get(t)
		if err != nil {
			continue
		}
		if m, err := meta.Accessor(obj); err == nil && belongsTo(ns, t, m.GetUID()) {
			out = append(out, t)
		}
	}
	return out
}

// writeReady sets status.observedGeneration and the Ready condition (with
// the same observedGeneration) and writes the status only if it changed.
func (c *Controller) writeReady(ctx context.Context, gvr schema.GroupVersionResource, u *unstructured.Unstructured, v verdict) error {
	var st capsulev1beta1.SettingsStatus
	if raw, ok := u.Object["status"]; ok {
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &st) // a malformed status is overwritten below
	}
	before := st.DeepCopy()
	gen := u.GetGeneration()
	status := metav1.ConditionTrue
	if !v.ok {
		status = metav1.ConditionFalse
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: capsulev1beta1.ConditionReady, Status: status, Reason: v.reason, Message: v.message,
		ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(c.clock.Now()),
	})
	st.ObservedGeneration = gen
	if reflect.DeepEqual(before, &st) {
		return nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return err
	}
	upd := u.DeepCopy()
	upd.Object["status"] = m
	var ri interface {
		UpdateStatus(context.Context, *unstructured.Unstructured, metav1.UpdateOptions) (*unstructured.Unstructured, error)
	} = c.dyn.Resource(gvr)
	if ns := u.GetNamespace(); ns != "" {
		ri = c.dyn.Resource(gvr).Namespace(ns)
	}
	if _, err := ri.UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("%s %s status: %w", gvr.Resource, u.GetName(), err)
	}
	return nil
}
