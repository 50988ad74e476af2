package resourcequota

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// legacy are the object-count names kube kept from before count/*.
var legacy = map[string]schema.GroupResource{
	"configmaps":             {Resource: "configmaps"},
	"secrets":                {Resource: "secrets"},
	"resourcequotas":         {Resource: "resourcequotas"},
	"services":               {Resource: "services"},
	"pods":                   {Resource: "pods"},
	"persistentvolumeclaims": {Resource: "persistentvolumeclaims"},
	"replicationcontrollers": {Resource: "replicationcontrollers"},
}

// NamesOf are the quota names that count objects of gr: count/<resource>
// for the core group, count/<resource>.<group> otherwise, and the legacy
// name where there is one.
func NamesOf(gr schema.GroupResource) []corev1.ResourceName {
	count := "count/" + gr.Resource
	if gr.Group != "" {
		count += "." + gr.Group
	}
	names := []corev1.ResourceName{corev1.ResourceName(count)}
	if gr.Group == "" {
		if _, ok := legacy[gr.Resource]; ok {
			names = append(names, corev1.ResourceName(gr.Resource))
		}
	}
	return names
}

// ResourceOf is the resource an object-count quota name counts; false for
// names that count no objects (cpu, services.nodeports, ...).
func ResourceOf(name corev1.ResourceName) (schema.GroupResource, bool) {
	if gr, ok := legacy[string(name)]; ok {
		return gr, true
	}
	rest, ok := strings.CutPrefix(string(name), "count/")
	if !ok || rest == "" {
		return schema.GroupResource{}, false
	}
	res, group, _ := strings.Cut(rest, ".")
	return schema.GroupResource{Group: group, Resource: res}, res != ""
}

// prettyPrint is kube's rendering of a resource list in quota errors:
// name=quantity, sorted by name, comma-separated.
func prettyPrint(l corev1.ResourceList) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		q := l[corev1.ResourceName(k)]
		parts = append(parts, k+"="+q.String())
	}
	return strings.Join(parts, ",")
}

func resourceCount(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }
