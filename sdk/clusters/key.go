package clusters

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// Annotation holds an object's logical cluster id; the hub sets it on every
// object it stores and overwrites whatever a client sent.
const Annotation = "wharf.dev/cluster"

// Index names always present in an informer's store.
const (
	// ByCluster indexes objects by logical cluster id.
	ByCluster = "cluster"
	// ByClusterNamespace indexes objects by "<cluster>|<namespace>".
	ByClusterNamespace = "cluster-namespace"
)

// ClusterOf returns the logical cluster of an object ("" if it has none,
// which the hub never serves).
func ClusterOf(obj interface{}) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetAnnotations()[Annotation]
}

// ToKey builds the store key of an object from its parts.
func ToKey(cluster, namespace, name string) string {
	if namespace == "" {
		return cluster + "|" + name
	}
	return cluster + "|" + namespace + "/" + name
}

// Key is the store key of obj: "<cluster>|<namespace>/<name>", or
// "<cluster>|<name>" for cluster-scoped objects. It understands
// cache.DeletedFinalStateUnknown, whose key it already carries.
func Key(obj interface{}) (string, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Key, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", fmt.Errorf("cluster key: %w", err)
	}
	c := m.GetAnnotations()[Annotation]
	if c == "" {
		// Keying it by namespace/name alone would bring back the collapse
		// this package exists to avoid.
		return "", fmt.Errorf("cluster key: %s/%s has no %s annotation", m.GetNamespace(), m.GetName(), Annotation)
	}
	return ToKey(c, m.GetNamespace(), m.GetName()), nil
}

// SplitKey is the inverse of Key.
func SplitKey(key string) (cluster, namespace, name string, err error) {
	cluster, rest, ok := strings.Cut(key, "|")
	if !ok || cluster == "" || rest == "" {
		return "", "", "", fmt.Errorf("unexpected cluster key %q", key)
	}
	namespace, name, ok = strings.Cut(rest, "/")
	if !ok {
		return cluster, "", rest, nil
	}
	if namespace == "" || name == "" || strings.Contains(name, "/") {
		return "", "", "", fmt.Errorf("unexpected cluster key %q", key)
	}
	return cluster, namespace, name, nil
}

// Indexers are the two indexes every informer of this package keeps.
func Indexers() cache.Indexers {
	return cache.Indexers{
		ByCluster: func(obj interface{}) ([]string, error) {
			c := ClusterOf(obj)
			if c == "" {
				return nil, nil
			}
			return []string{c}, nil
		},
		ByClusterNamespace: func(obj interface{}) ([]string, error) {
			m, err := meta.Accessor(obj)
			if err != nil {
				return nil, err
			}
			c := m.GetAnnotations()[Annotation]
			if c == "" || m.GetNamespace() == "" {
				return nil, nil
			}
			return []string{c + "|" + m.GetNamespace()}, nil
		},
	}
}
