package workspaces

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
)

// Remaining is what a terminating workspace still holds: objects per
// resource and the finalizers that hold them. It is what the
// ContentDeleted condition, the log line and the forced-objects metric
// report, in the words the namespace controller uses for a namespace.
type Remaining struct {
	// Resources counts objects by group resource ("configmaps",
	// "widgets.example.com").
	Resources map[string]int
	// Finalizers counts objects by each finalizer they carry.
	Finalizers map[string]int
}

// Add counts one remaining object of gr.
func (r *Remaining) Add(gr schema.GroupResource, obj metav1.Object) {
	if r.Resources == nil {
		r.Resources = map[string]int{}
	}
	r.Resources[gr.String()]++
	for _, f := range obj.GetFinalizers() {
		if f == tenancyv1alpha1.WorkspaceCleanupFinalizer {
			// The hub's own; the child's deletion drops it.
			continue
		}
		if r.Finalizers == nil {
			r.Finalizers = map[string]int{}
		}
		r.Finalizers[f]++
	}
}

// Merge adds the counts of o.
func (r *Remaining) Merge(o Remaining) {
	for k, n := range o.Resources {
		if r.Resources == nil {
			r.Resources = map[string]int{}
		}
		r.Resources[k] += n
	}
	for k, n := range o.Finalizers {
		if r.Finalizers == nil {
			r.Finalizers = map[string]int{}
		}
		r.Finalizers[k] += n
	}
}

// Empty reports whether nothing remains.
func (r Remaining) Empty() bool { return len(r.Resources) == 0 }

// Total is the number of remaining objects.
func (r Remaining) Total() int {
	n := 0
	for _, c := range r.Resources {
		n += c
	}
	return n
}

// Condition is the ContentDeleted reason and message while content
// remains: finalizers first, since they are what a deletion waits for.
func (r Remaining) Condition() (reason, message string) {
	if len(r.Finalizers) > 0 {
		return tenancyv1alpha1.WorkspaceReasonSomeFinalizersRemain,
			"Some content in the workspace has finalizers remaining: " + list(r.Finalizers, "%s in %d resource instances")
	}
	return tenancyv1alpha1.WorkspaceReasonSomeResourcesRemain,
		"Some resources are remaining: " + list(r.Resources, "%s has %d resource instances")
}

// String lists the remaining resources and finalizers, for logs.
func (r Remaining) String() string {
	s := list(r.Resources, "%s has %d resource instances")
	if len(r.Finalizers) > 0 {
		s += "; finalizers: " + list(r.Finalizers, "%s in %d resource instances")
	}
	return s
}

func list(m map[string]int, format string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf(format, k, m[k]))
	}
	return strings.Join(parts, ", ")
}
