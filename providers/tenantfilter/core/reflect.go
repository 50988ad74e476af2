package core

import (
	"context"
	"net/http"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/tools/cache"
)

// ReflectionLabel marks a RoleBinding whose LIST rights are reflected to
// cluster-wide lists (capsule-proxy's label).
const ReflectionLabel = "reflection.proxy.projectcapsule.dev/enabled"

var (
	roleBindingsGVR = rbacv1.SchemeGroupVersion.WithResource("rolebindings")
	rolesGVR        = rbacv1.SchemeGroupVersion.WithResource("roles")
	clusterRolesGVR = rbacv1.SchemeGroupVersion.WithResource("clusterroles")
)

// subjectIndex indexes RoleBindings by the subjects they name.
const subjectIndex = "subject"

func (c *Core) configureReflector() {
	c.kc.configure(roleBindingsGVR, cache.Indexers{subjectIndex: bindingSubjects}, c.changed.handler(), c.opts.RoleBindingsResyncPeriod)
}

func (c *Core) startReflector() {
	for _, gvr := range []schema.GroupVersionResource{roleBindingsGVR, rolesGVR, clusterRolesGVR} {
		c.kc.informer(gvr)
	}
}

func (c *Core) waitReflector(ctx context.Context) bool {
	var syncs []cache.InformerSynced
	for _, gvr := range []schema.GroupVersionResource{roleBindingsGVR, rolesGVR, clusterRolesGVR} {
		syncs = append(syncs, c.kc.informer(gvr).HasSynced)
	}
	return cache.WaitForCacheSync(ctx.Done(), syncs...)
}

// coreGVRs are the informers Ready waits for.
func (c *Core) coreGVRs() []schema.GroupVersionResource {
	out := []schema.GroupVersionResource{namespacesGVR}
	if c.opts.EnableReflector {
		out = append(out, roleBindingsGVR, rolesGVR, clusterRolesGVR)
	}
	return out
}

func subjectKey(kind, name string) string { return kind + ":" + name }

func bindingSubjects(obj any) ([]string, error) {
	rb, ok := toRoleBinding(obj)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, s := range rb.Subjects {
		switch s.Kind {
		case rbacv1.UserKind, rbacv1.GroupKind:
			keys = append(keys, subjectKey(s.Kind, s.Name))
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = rb.Namespace
			}
			keys = append(keys, subjectKey(rbacv1.UserKind, "system:serviceaccount:"+ns+":"+s.Name))
		}
	}
	return keys, nil
}

func toRoleBinding(obj any) (*rbacv1.RoleBinding, bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, false
	}
	var rb rbacv1.RoleBinding
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &rb) != nil {
		return nil, false
	}
	return &rb, true
}

// bindingsFor are the RoleBindings naming the caller (as user, service
// account or one of its groups).
func (c *Core) bindingsFor(caller Caller) []*rbacv1.RoleBinding {
	if !c.opts.EnableReflector {
		return nil
	}
	inf, ok := c.kc.started(roleBindingsGVR)
	if !ok {
		return nil
	}
	keys := []string{subjectKey(rbacv1.UserKind, caller.User)}
	for _, g := range caller.Groups {
		keys = append(keys, subjectKey(rbacv1.GroupKind, g))
	}
	seen := map[string]bool{}
	var out []*rbacv1.RoleBinding
	for _, k := range keys {
		objs, err := inf.GetIndexer().ByIndex(subjectIndex, k)
		if err != nil {
			continue
		}
		for _, o := range objs {
			rb, ok := toRoleBinding(o)
			if !ok || seen[rb.Namespace+"/"+rb.Name] {
				continue
			}
			seen[rb.Namespace+"/"+rb.Name] = true
			out = append(out, rb)
		}
	}
	return out
}

// reflectedNamespaces: with the reflector on, every namespace where a
// RoleBinding names the caller is visible to it.
func (c *Core) reflectedNamespaces(caller Caller) []string {
	var out []string
	for _, rb := range c.bindingsFor(caller) {
		out = append(out, rb.Namespace)
	}
	return out
}

// serveClusterWideList answers a list or watch of a namespaced resource
// across all namespaces, filtered to the namespaces the caller may list it
// in: its tenants' namespaces (ProxyAllNamespaced) and those reflected by
// labelled RoleBindings whose role allows the list (with the tenant's
// sibling namespaces). With no such namespace the request goes on to the
// downstream impersonated, where native RBAC decides.
func (c *Core) serveClusterWideList(w http.ResponseWriter, r *http.Request, caller Caller, info *request.RequestInfo) bool {
	if info.Namespace != "" || info.Subresource != "" || (info.Verb != "list" && info.Verb != "watch") {
		return false
	}
	if !c.opts.Gate(GateProxyAllNamespaced) && !c.opts.EnableReflector {
		return false
	}
	res, ok := c.cache.Resource(info.APIGroup, info.APIVersion, info.Resource)
	if !ok || !res.Namespaced {
		return false
	}
	allowed := map[string]bool{}
	addTenantOf := func(ns string) {
		allowed[ns] = true
		if t, ok := c.tenancy.NamespaceTenant(ns); ok {
			for _, n := range c.tenancy.TenantNamespaces(t) {
				allowed[n] = true
			}
		}
	}
	if c.opts.Gate(GateProxyAllNamespaced) {
		for _, t := range c.ownedTenants(caller) {
			for _, n := range c.tenancy.TenantNamespaces(t) {
				allowed[n] = true
			}
		}
	}
	for _, rb := range c.bindingsFor(caller) {
		if rb.Labels[ReflectionLabel] == "true" && c.roleAllowsList(rb, info.APIGroup, info.Resource) {
			addTenantOf(rb.Namespace)
		}
	}
	if len(allowed) == 0 {
		return false
	}
	keep := func(m metav1.ObjectMeta) bool { return allowed[m.Namespace] }
	if info.Verb == "watch" {
		c.serveFilteredWatch(w, r, caller, keep)
	} else {
		c.serveFilteredList(w, r, caller, keep)
	}
	return true
}

// roleAllowsList reports whether the binding's role has a rule allowing
// list on group/resource (a rule limited to resourceNames cannot allow a
// list).
func (c *Core) roleAllowsList(rb *rbacv1.RoleBinding, group, resource string) bool {
	var gvr schema.GroupVersionResource
	key := rb.RoleRef.Name
	switch rb.RoleRef.Kind {
	case "Role":
		gvr, key = rolesGVR, rb.Namespace+"/"+rb.RoleRef.Name
	case "ClusterRole":
		gvr = clusterRolesGVR
	default:
		return false
	}
	inf, ok := c.kc.started(gvr)
	if !ok {
		return false
	}
	obj, exists, err := inf.GetStore().GetByKey(key)
	if err != nil || !exists {
		return false
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return false
	}
	rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
	for _, raw := range rules {
		m, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		var rule rbacv1.PolicyRule
		if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &rule) != nil || len(rule.ResourceNames) > 0 {
			continue
		}
		if matchesAny(rule.Verbs, "list") && matchesAny(rule.APIGroups, group) && matchesAny(rule.Resources, resource) {
			return true
		}
	}
	return false
}

func matchesAny(list []string, want string) bool {
	for _, v := range list {
		if v == "*" || v == want {
			return true
		}
	}
	return false
}
