package storage

import "k8s.io/apiserver/pkg/storage"

// SkippedObjects is the counter of refused stored values, for tests.
var SkippedObjects = skippedObjects

// Underlying is what the cluster decorator s delegates to (nil when s
// is not one), for tests that check how a store was built.
func Underlying(s storage.Interface) storage.Interface {
	if c, ok := s.(*clusterStorage); ok {
		return c.delegate
	}
	return nil
}
