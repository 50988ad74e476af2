package storage

import (
	"sync"

	clientfeatures "k8s.io/client-go/features"
)

// noWatchList wraps client-go's feature gates with WatchListClient forced
// off.
//
// Why: with WatchListClient on, the watch cache's reflector fills itself
// from a streamed watch through a temporary store keyed by namespace/name,
// before handing the objects to the watch cache. Objects of the same name in
// two logical clusters collide there, so after every restart all but one of
// them would be missing from the cache. The classic list path hands the
// objects straight to the watch cache, which keys them with our cluster-aware
// key function.
type noWatchList struct{ clientfeatures.Gates }

func (g noWatchList) Enabled(f clientfeatures.Feature) bool {
	if f == clientfeatures.WatchListClient {
		return false
	}
	return g.Gates.Enabled(f)
}

var disableWatchListOnce sync.Once

// disableWatchList installs noWatchList process-wide. client-go's feature
// gates are global, and every cluster-partitioned watch cache needs this, so
// the decorator installs it before the first cache is built.
func disableWatchList() {
	disableWatchListOnce.Do(func() {
		clientfeatures.ReplaceFeatureGates(noWatchList{Gates: clientfeatures.FeatureGates()})
	})
}
