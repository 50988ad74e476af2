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
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	a := m.GetAnnotations()
	_, marked := a[QuarantineAnnotation]
	_, reasoned := a[quarantineReasonAnnotation]
	if marked || reasoned {
		delete(a, QuarantineAnnotation)
		delete(a, quarantineReasonAnnotation)
		m.SetAnnotations(a)
	}
	if a[ClusterAnnotation] == string(id) {
		return nil
	}
	if a == nil {
		a = make(map[string]string, 1)
	}
	a[ClusterAnnotation] = string(id)
	m.SetAnnotations(a)
	return nil
}
