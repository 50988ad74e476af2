package core

import (
	"context"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	capsulev1beta1 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta1"
	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
)

// globalNamespaces are the namespaces GlobalProxySettings rules on the
// core "namespaces" resource select for the caller (feature gate
// ProxyClusterScoped). Each rule's selector is applied whole to the
// namespace's labels, which include kubernetes.io/metadata.name, so a rule
// can name namespaces.
func (c *Core) globalNamespaces(caller Caller) []string {
	if !c.opts.Gate(GateProxyClusterScoped) {
		return nil
	}
	gvr := capsulev1beta1.GlobalProxySettingsGVR
	if _, ok := c.cache.Resource(gvr.Group, gvr.Version, gvr.Resource); !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gl, err := c.cache.Lister(ctx, gvr)
	if err != nil {
		klog.V(1).InfoS("tenant filter: GlobalProxySettings unavailable", "err", err)
		return nil
	}
	objs, err := gl.List(labels.Everything())
	if err != nil {
		return nil
	}
	var sels []labels.Selector
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		var gps capsulev1beta1.GlobalProxySettings
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &gps) != nil {
			continue
		}
		for _, rule := range gps.Spec.Rules {
			if !subjectsMatch(rule.Subjects, caller) {
				continue
			}
			for _, cr := range rule.ClusterResources {
				if !selectsNamespaces(cr) || cr.Selector == nil {
					continue
				}
				sel, err := metav1.LabelSelectorAsSelector(cr.Selector)
				if err != nil {
					continue
				}
				sels = append(sels, sel)
			}
		}
	}
	if len(sels) == 0 {
		return nil
	}
	inf, ok := c.kc.started(namespacesGVR)
	if !ok {
		return nil
	}
	var out []string
	for _, o := range inf.GetStore().List() {
		m, err := metaAccessor(o)
		if err != nil {
			continue
		}
		for _, s := range sels {
			if s.Matches(labels.Set(m.GetLabels())) {
				out = append(out, m.GetName())
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

func subjectsMatch(subjects []capsulev1beta1.GlobalSubject, caller Caller) bool {
	for _, s := range subjects {
		switch s.Kind {
		case capsulev1beta2.UserOwner, capsulev1beta2.ServiceAccountOwner:
			if s.Name == caller.User {
				return true
			}
		case capsulev1beta2.GroupOwner:
			if contains(caller.Groups, s.Name) {
				return true
			}
		}
	}
	return false
}

// selectsNamespaces: the rule's apiGroups cover the core group (v1) and its
// resources cover "namespaces". The operations do not matter for a list:
// List and Get both allow it... except Get alone, which never lists.
func selectsNamespaces(cr capsulev1beta1.ClusterResource) bool {
	if len(cr.Operations) == 1 && cr.Operations[0] == capsulev1beta1.ClusterResourceOperationGet {
		return false
	}
	group := false
	for _, p := range cr.APIGroups {
		if gp, vp, ok := strings.Cut(p, "/"); ok {
			group = group || (globMatch(gp, "") && globMatch(vp, "v1"))
		} else {
			group = group || globMatch(p, "")
		}
	}
	res := false
	for _, r := range cr.Resources {
		res = res || r == "*" || r == "namespaces"
	}
	return group && res
}

// globMatch matches s against a pattern whose only wildcard is "*".
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for i, p := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(s, p)
		}
		idx := strings.Index(s, p)
		if idx < 0 {
			return false
		}
		s = s[idx+len(p):]
	}
	return true
}
