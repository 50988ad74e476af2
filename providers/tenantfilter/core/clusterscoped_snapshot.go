package core

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	capsulev1beta1 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta1"
	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
	"github.com/wharfhub/wharf/providers/tenantfilter/rules"
)

// grantsSnapshot builds the rules engine's input from the informer caches:
// Tenants always (class grants are always on), the settings objects when
// their CRDs are served. A settings kind that is not installed contributes
// nothing; a Tenant cache that cannot be read is an error (fail closed).
func (c *Core) grantsSnapshot(ctx context.Context) (*rules.Snapshot, error) {
	snap := &rules.Snapshot{
		TenantNamespaces: c.tenancy.TenantNamespaces,
		NamespaceTenant:  c.tenancy.NamespaceTenant,
		// The status controller's discovery verdicts (a namespaced kind, a
		// kind without get) void an object here too: Ready=False grants
		// nothing.
		Discovered: c.cache.Discovered(),
	}
	objs, err := c.listCached(ctx, capsulev1beta2.TenantsGVR.Group, capsulev1beta2.TenantsGVR.Resource)
	if err != nil {
		return nil, fmt.Errorf("tenants: %w", err)
	}
	for _, o := range objs {
		if t, ok := memoized(o, func(u *unstructured.Unstructured) (rules.Tenant, bool) {
			var t capsulev1beta2.Tenant
			if !convert(u, &t) {
				return rules.Tenant{}, false
			}
			return tenantRules(&t), true
		}); ok {
			snap.Tenants = append(snap.Tenants, t)
		}
	}
	if c.opts.Gate(GateProxyClusterScoped) {
		objs, _ = c.listCached(ctx, capsulev1beta1.GroupName, capsulev1beta1.ResourceGlobalProxySettings)
		for _, o := range objs {
			if g, ok := memoized(o, func(u *unstructured.Unstructured) (rules.GlobalProxySettings, bool) {
				var g capsulev1beta1.GlobalProxySettings
				if !convert(u, &g) {
					return rules.GlobalProxySettings{}, false
				}
				return rules.GlobalFromCapsule(&g), true
			}); ok {
				snap.Global = append(snap.Global, g)
			}
		}
	}
	objs, _ = c.listCached(ctx, capsulev1beta1.GroupName, capsulev1beta1.ResourceProxySettings)
	for _, o := range objs {
		if p, ok := memoized(o, func(u *unstructured.Unstructured) (rules.ProxySetting, bool) {
			var p capsulev1beta1.ProxySetting
			if !convert(u, &p) {
				return rules.ProxySetting{}, false
			}
			return rules.ProxySettingFromCapsule(&p), true
		}); ok {
			snap.ProxySettings = append(snap.ProxySettings, p)
		}
	}
	return snap, nil
}

// listCached lists a resource from its informer. Capsule's kinds are
// looked up by group and resource so that whichever version discovery
// prefers is used; a kind that is not served has no objects.
func (c *Core) listCached(ctx context.Context, group, resource string) ([]runtime.Object, error) {
	ri, ok := c.cache.Resource(group, "", resource)
	if !ok {
		return nil, nil
	}
	l, err := c.cache.Lister(ctx, ri.GVR)
	if err != nil {
		return nil, err
	}
	return l.List(labels.Everything())
}

// memo holds the engine's form of each settings object, keyed by UID and
// resourceVersion (a changed object has a new resourceVersion, so an entry
// is never stale), so that a request does not decode every Tenant again.
// UIDs are unique, so one process-wide table serves every Core.
var memo = struct {
	mu sync.Mutex
	m  map[string]any
}{m: map[string]any{}}

// memoMax bounds the table; past it, the table starts over (the next
// requests decode again), which is simpler than tracking deletions.
const memoMax = 20000

func memoized[T any](o runtime.Object, build func(*unstructured.Unstructured) (T, bool)) (T, bool) {
	var zero T
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		klog.V(2).InfoS("tenant filter: unexpected cached object type", "type", fmt.Sprintf("%T", o))
		return zero, false
	}
	key := u.GetAPIVersion() + "/" + u.GetKind() + "/" + string(u.GetUID()) + "/" + u.GetResourceVersion()
	memo.mu.Lock()
	v, hit := memo.m[key]
	memo.mu.Unlock()
	if hit {
		t, ok := v.(T)
		return t, ok
	}
	t, ok := build(u)
	if !ok {
		return zero, false
	}
	memo.mu.Lock()
	if len(memo.m) >= memoMax {
		memo.m = map[string]any{}
	}
	memo.m[key] = t
	memo.mu.Unlock()
	return t, true
}

// convert decodes a cached object into a typed one; an object that does
// not decode is skipped (and logged), never half-applied.
func convert(u *unstructured.Unstructured, into any) bool {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		klog.V(1).InfoS("tenant filter: cannot decode settings object", "kind", u.GetKind(), "name", u.GetName(), "namespace", u.GetNamespace(), "err", err)
		return false
	}
	return true
}

func tenantRules(t *capsulev1beta2.Tenant) rules.Tenant {
	out := rules.Tenant{
		Name:            t.Name,
		NodeSelector:    t.Spec.NodeSelector,
		StorageClasses:  allowedList(t.Spec.StorageClasses),
		IngressClasses:  allowedList(t.Spec.IngressOptions.AllowedClasses),
		PriorityClasses: allowedList(t.Spec.PriorityClasses),
		RuntimeClasses:  allowedList(t.Spec.RuntimeClasses),
	}
	for _, o := range t.Spec.Owners {
		out.Owners = append(out.Owners, owner(string(o.Kind), o.Name, o.ProxyOperations))
	}
	return out
}

func owner(kind, name string, ops []capsulev1beta2.ProxySettings) rules.Owner {
	o := rules.Owner{Subject: rules.Subject{Kind: kind, Name: name}}
	for _, p := range ops {
		g := rules.KindGrant{Kind: string(p.Kind)}
		for _, op := range p.Operations {
			g.Operations = append(g.Operations, string(op))
		}
		o.ProxySettings = append(o.ProxySettings, g)
	}
	return o
}

func allowedList(a *capsulev1beta2.DefaultAllowedListSpec) *rules.AllowedList {
	if a == nil {
		return nil
	}
	return &rules.AllowedList{
		Default:       a.Default,
		Allowed:       a.Exact,
		AllowedRegex:  a.Regex,
		LabelSelector: a.LabelSelector,
	}
}

// grantsConfig and grantsIdentity map the options and the caller.
func (c *Core) grantsConfig() rules.Config {
	return rules.Config{ProxyClusterScoped: c.opts.Gate(GateProxyClusterScoped), RequireCapsuleUser: c.opts.RequireCapsuleUser}
}

func (c *Core) grantsIdentity(caller Caller) rules.Identity {
	return rules.Identity{User: caller.User, Groups: caller.Groups, TenantUser: c.tenancy.IsTenantUser(caller)}
}
