package storage

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wharfhub/wharf/hub/cluster"
)

// ClusterAnnotation names the logical cluster an object is stored in.
const ClusterAnnotation = "wharf.dev/cluster"

// ClusterKey inserts the cluster segment right after resourcePrefix in a key
// computed by an upstream registry. It refuses keys outside resourcePrefix so
// that a malformed key cannot escape into another resource's key space.
func ClusterKey(resourcePrefix, key string, id cluster.ID) (string, error) {
	if id == "" {
		return "", fmt.Errorf("empty cluster for key %q", key)
	}
	if strings.Contains(string(id), "/") {
		return "", fmt.Errorf("invalid cluster %q", id)
	}
	rest, ok := strings.CutPrefix(key, resourcePrefix)
	if !ok || (rest != "" && rest[0] != '/') {
		return "", fmt.Errorf("key %q is outside resource prefix %q", key, resourcePrefix)
	}
	return resourcePrefix + "/" + string(id) + rest, nil
}

// ClusterFromKey returns the cluster segment of a rewritten key.
func ClusterFromKey(resourcePrefix, key string) (cluster.ID, bool) {
	rest, ok := strings.CutPrefix(key, resourcePrefix+"/")
	if !ok {
		return "", false
	}
	seg, _, _ := strings.Cut(rest, "/")
	return cluster.ID(seg), seg != ""
}

// ResourcePrefix is the key prefix of a resource: /<group>/<resource>, with
// "core" standing in for the legacy group so that every key has the same
// number of segments.
func ResourcePrefix(group, resource string) string {
	if group == "" {
		group = "core"
	}
	return "/" + group + "/" + resource
}

// clusterOf reads the cluster annotation of a stored object.
func clusterOf(obj runtime.Object) (cluster.ID, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	id := m.GetAnnotations()[ClusterAnnotation]
	if id == "" {
		return "", fmt.Errorf("%T %s/%s has no %s annotation", obj, m.GetNamespace(), m.GetName(), ClusterAnnotation)
	}
	return cluster.ID(id), nil
}

// setCluster stamps the cluster annotation, overwriting any client value,
// and drops the quarantine marker, which only the read guard may set.
func setCluster(obj runtime.Object, id cluster.ID) error {
	a, changed, err := StampedAnnotations(obj, id)
	if err != nil || !changed {
		return err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	m.SetAnnotations(a)
	return nil
}

// StampedAnnotations returns obj's annotations as every write into
// cluster id stores them (setCluster), and whether they differ from obj's.
// obj is not changed: hub/quota measures a write before the decorator
// stamps it.
func StampedAnnotations(obj runtime.Object, id cluster.ID) (map[string]string, bool, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, false, err
	}
	a := m.GetAnnotations()
	_, marked := a[QuarantineAnnotation]
	_, reasoned := a[quarantineReasonAnnotation]
	if !marked && !reasoned && a[ClusterAnnotation] == string(id) {
		return a, false, nil
	}
	out := make(map[string]string, len(a)+1)
	for k, v := range a {
		if k != QuarantineAnnotation && k != quarantineReasonAnnotation {
			out[k] = v
		}
	}
	out[ClusterAnnotation] = string(id)
	return out, true, nil
}
