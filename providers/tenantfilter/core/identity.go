package core

import (
	"context"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
)

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// tenantIndex indexes namespaces by the tenant they belong to.
const tenantIndex = "tenant"

// tenancy implements Tenancy from the cached Tenants, namespaces and the
// selected CapsuleConfiguration. Tenants are kept decoded (by an event
// handler) so that a request never converts hundreds of objects.
type tenancy struct {
	opts    Options
	kc      *informerCache
	changed *notifier

	mu      sync.RWMutex // guards tenants and started
	tenants map[string]*capsulev1beta2.Tenant
	started bool // both informers run
}

func newTenancy(opts Options, kc *informerCache, changed *notifier) *tenancy {
	t := &tenancy{opts: opts, kc: kc, changed: changed, tenants: map[string]*capsulev1beta2.Tenant{}}
	kc.configure(namespacesGVR, cache.Indexers{tenantIndex: namespaceTenantIndex}, changed.handler(), 0)
	kc.configure(capsulev1beta2.TenantsGVR, nil, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.storeTenant(obj) },
		UpdateFunc: func(_, obj any) { t.storeTenant(obj) },
		DeleteFunc: func(obj any) { t.deleteTenant(obj) },
	}, 0)
	kc.configure(capsulev1beta2.CapsuleConfigurationsGVR, nil, changed.handler(), 0)
	return t
}

// ensureStarted starts the Tenant and CapsuleConfiguration informers once
// discovery lists them (either CRD may be installed after the provider
// started). It reports whether the Tenant informer runs.
func (t *tenancy) ensureStarted() bool {
	t.mu.RLock()
	started := t.started
	t.mu.RUnlock()
	if started {
		return true
	}
	tenants := t.startIfServed(capsulev1beta2.TenantsGVR)
	configs := t.startIfServed(capsulev1beta2.CapsuleConfigurationsGVR)
	if tenants && configs {
		t.mu.Lock()
		t.started = true
		t.mu.Unlock()
	}
	return tenants
}

func (t *tenancy) startIfServed(gvr schema.GroupVersionResource) bool {
	if _, ok := t.kc.started(gvr); ok {
		return true
	}
	if _, ok := t.kc.Resource(gvr.Group, gvr.Version, gvr.Resource); !ok {
		return false
	}
	t.kc.informer(gvr)
	return true
}

// waitForSync waits for the tenancy informers that run.
func (t *tenancy) waitForSync(ctx context.Context) bool {
	t.ensureStarted()
	var syncs []cache.InformerSynced
	for _, gvr := range []schema.GroupVersionResource{namespacesGVR, capsulev1beta2.TenantsGVR, capsulev1beta2.CapsuleConfigurationsGVR} {
		if inf, ok := t.kc.started(gvr); ok {
			syncs = append(syncs, inf.HasSynced)
		}
	}
	return cache.WaitForCacheSync(ctx.Done(), syncs...)
}

func (t *tenancy) storeTenant(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	var tn capsulev1beta2.Tenant
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &tn); err != nil {
		klog.ErrorS(err, "tenant filter: undecodable Tenant; ignoring it", "tenant", u.GetName())
		t.deleteName(u.GetName())
		return
	}
	t.mu.Lock()
	t.tenants[tn.Name] = &tn
	t.mu.Unlock()
	t.changed.notify()
}

func (t *tenancy) deleteTenant(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if m, err := metaAccessor(obj); err == nil {
		t.deleteName(m.GetName())
	}
}

func (t *tenancy) deleteName(name string) {
	t.mu.Lock()
	delete(t.tenants, name)
	t.mu.Unlock()
	t.changed.notify()
}

// tenant returns a decoded Tenant by name.
func (t *tenancy) tenant(name string) (*capsulev1beta2.Tenant, bool) {
	t.ensureStarted()
	t.mu.RLock()
	defer t.mu.RUnlock()
	tn, ok := t.tenants[name]
	return tn, ok
}

// configuration returns the selected CapsuleConfiguration, if it exists.
func (t *tenancy) configuration() (*capsulev1beta2.CapsuleConfiguration, bool) {
	t.ensureStarted()
	inf, ok := t.kc.started(capsulev1beta2.CapsuleConfigurationsGVR)
	if !ok {
		return nil, false
	}
	name := t.opts.CapsuleConfigurationName
	if name == "" {
		name = "default"
	}
	obj, exists, err := inf.GetStore().GetByKey(name)
	if err != nil || !exists {
		return nil, false
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, false
	}
	var cfg capsulev1beta2.CapsuleConfiguration
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cfg); err != nil {
		klog.ErrorS(err, "tenant filter: undecodable CapsuleConfiguration", "name", name)
		return nil, false
	}
	return &cfg, true
}

// tenantAware: the selected CapsuleConfiguration exists, so Capsule's
// notion of tenant users applies.
func (t *tenancy) tenantAware() bool {
	_, ok := t.configuration()
	return ok
}

// IsTenantUser implements Tenancy.
func (t *tenancy) IsTenantUser(c Caller) bool {
	cfg, ok := t.configuration()
	if !ok {
		return false
	}
	for _, u := range cfg.Status.Users {
		switch u.Kind {
		case capsulev1beta2.UserOwner, capsulev1beta2.ServiceAccountOwner:
			if u.Name == c.User {
				return true
			}
		case capsulev1beta2.GroupOwner:
			if contains(c.Groups, u.Name) {
				return true
			}
		}
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, tn := range t.tenants {
		for _, o := range tn.Spec.Owners {
			if o.Kind == capsulev1beta2.ServiceAccountOwner && o.Name == c.User {
				return true
			}
		}
	}
	return false
}

// Ignored implements Tenancy.
func (t *tenancy) Ignored(c Caller) bool {
	if contains(t.opts.IgnoredUsernames, c.User) {
		return true
	}
	for _, g := range c.Groups {
		if contains(t.opts.IgnoredUserGroups, g) {
			return true
		}
	}
	return false
}

// OwnedTenants implements Tenancy.
func (t *tenancy) OwnedTenants(c Caller) []string {
	t.ensureStarted()
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []string
	for name, tn := range t.tenants {
		if ownedBy(tn, c) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func ownedBy(tn *capsulev1beta2.Tenant, c Caller) bool {
	for _, o := range tn.Spec.Owners {
		switch o.Kind {
		case capsulev1beta2.UserOwner, capsulev1beta2.ServiceAccountOwner:
			if o.Name == c.User {
				return true
			}
		case capsulev1beta2.GroupOwner:
			if contains(c.Groups, o.Name) {
				return true
			}
		}
	}
	return false
}

// TenantNamespaces implements Tenancy.
func (t *tenancy) TenantNamespaces(tenant string) []string {
	inf, ok := t.kc.started(namespacesGVR)
	if !ok {
		return nil
	}
	objs, err := inf.GetIndexer().ByIndex(tenantIndex, tenant)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		if m, err := metaAccessor(o); err == nil {
			out = append(out, m.GetName())
		}
	}
	sort.Strings(out)
	return out
}

// NamespaceTenant implements Tenancy.
func (t *tenancy) NamespaceTenant(ns string) (string, bool) {
	inf, ok := t.kc.started(namespacesGVR)
	if !ok {
		return "", false
	}
	obj, exists, err := inf.GetStore().GetByKey(ns)
	if err != nil || !exists {
		return "", false
	}
	m, err := metaAccessor(obj)
	if err != nil {
		return "", false
	}
	return tenantOf(m.GetLabels(), m.GetOwnerReferences())
}

// tenantOf names the tenant a namespace's metadata assigns it to: the
// ownerReference to a Tenant wins (Capsule sets it), then Capsule's label,
// then the newer projectcapsule.dev label.
func tenantOf(labels map[string]string, refs []metav1.OwnerReference) (string, bool) {
	for _, r := range refs {
		gv, err := schema.ParseGroupVersion(r.APIVersion)
		if err == nil && gv.Group == capsulev1beta2.GroupName && r.Kind == "Tenant" && r.Name != "" {
			return r.Name, true
		}
	}
	if v := labels[capsulev1beta2.TenantLabel]; v != "" {
		return v, true
	}
	if v := labels[capsulev1beta2.ProjectTenantLabel]; v != "" {
		return v, true
	}
	return "", false
}

func namespaceTenantIndex(obj any) ([]string, error) {
	m, err := metaAccessor(obj)
	if err != nil {
		return nil, nil
	}
	if tn, ok := tenantOf(m.GetLabels(), m.GetOwnerReferences()); ok {
		return []string{tn}, nil
	}
	return nil, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// syncWait bounds how long a request waits for the caches at start.
const syncWait = 30 * time.Second

// ownedTenants are the caller's tenants when tenant-aware features are on
// (the selected CapsuleConfiguration exists); without it they are skipped,
// as capsule-proxy does, and only global grants apply.
func (c *Core) ownedTenants(caller Caller) []string {
	if !c.tn.tenantAware() {
		return nil
	}
	return c.tenancy.OwnedTenants(caller)
}
