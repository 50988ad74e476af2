package controller

import (
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/providers/tenantfilter/rules"
)

// discoveryCache is a snapshot of every served group version's resources,
// refreshed when older than ttl. A group that fails discovery (a broken
// aggregated API such as metrics.k8s.io) is left out of the snapshot
// instead of failing it, so it never stalls validation of the others.
type discoveryCache struct {
	client discovery.DiscoveryInterface
	clock  clock.Clock
	ttl    time.Duration

	mu      sync.Mutex // guards the fields below
	fetched time.Time
	all     []rules.Resource
}

func newDiscoveryCache(dc discovery.DiscoveryInterface, c clock.Clock, ttl time.Duration) *discoveryCache {
	return &discoveryCache{client: dc, clock: c, ttl: ttl}
}

// resources returns the snapshot, refreshing it if stale. On an error with
// no partial result the previous snapshot is kept.
func (d *discoveryCache) resources() []rules.Resource {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.all != nil && d.clock.Since(d.fetched) < d.ttl {
		return d.all
	}
	_, lists, err := d.client.ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return d.all
	}
	d.all = flatten(lists)
	d.fetched = d.clock.Now()
	return d.all
}

// flatten lists every discovered resource in the rules engine's terms.
func flatten(lists []*metav1.APIResourceList) []rules.Resource {
	out := []rules.Resource{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") { // subresources are never selected
				continue
			}
			out = append(out, rules.Resource{Group: gv.Group, Version: gv.Version, Resource: r.Name, Namespaced: r.Namespaced, Verbs: r.Verbs})
		}
	}
	return out
}
