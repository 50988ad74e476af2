package resourcequota

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Exceeded is kube's refusal text for one quota.
type Exceeded struct {
	Quota                    string
	Requested, Used, Limited corev1.ResourceList
}

func (e *Exceeded) Error() string {
	return fmt.Sprintf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
		e.Quota, prettyPrint(e.Requested), prettyPrint(e.Used), prettyPrint(e.Limited))
}

// Charge adds one object counted under names to every quota whose
// status.hard has one of them, as kube's checkRequest does: the quotas in
// name order, the first that would pass its hard limit refusing. It
// returns the quotas to write back (copies with status.used raised) and
// leaves quotas unchanged. Used values a quota lacks must have been filled
// in by the caller.
func Charge(quotas []*corev1.ResourceQuota, names []corev1.ResourceName) ([]*corev1.ResourceQuota, error) {
	sorted := append([]*corev1.ResourceQuota(nil), quotas...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var changed []*corev1.ResourceQuota
	for _, q := range sorted {
		requested := corev1.ResourceList{}
		for _, n := range names {
			if _, ok := q.Status.Hard[n]; ok {
				requested[n] = resource.MustParse("1")
			}
		}
		if len(requested) == 0 {
			continue
		}
		out := q.DeepCopy()
		if out.Status.Used == nil {
			out.Status.Used = corev1.ResourceList{}
		}
		exceeded := &Exceeded{Quota: q.Name, Requested: corev1.ResourceList{}, Used: corev1.ResourceList{}, Limited: corev1.ResourceList{}}
		for n, r := range requested {
			used, hasUsed := q.Status.Used[n]
			sum := used.DeepCopy()
			sum.Add(r)
			if hard := q.Status.Hard[n]; sum.Cmp(hard) > 0 {
				exceeded.Requested[n] = r
				if hasUsed {
					exceeded.Used[n] = used
				}
				exceeded.Limited[n] = hard
			}
			out.Status.Used[n] = sum
		}
		if len(exceeded.Limited) > 0 {
			return nil, exceeded
		}
		changed = append(changed, out)
	}
	return changed, nil
}
