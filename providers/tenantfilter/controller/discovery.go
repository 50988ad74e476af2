package controller

import (
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"
)

// apiResource is one discovered resource in one group version.
type apiResource struct {
	gv         schema.GroupVersion
	name       string
	namespaced bool
	verbs      []string
}

func (r apiResource) hasVerb(v string) bool {
	for _, x := range r.verbs {
		if x == v {
			return true
		}
	}
	return false
}

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
	all     []apiResource
}

func newDiscoveryCache(dc discovery.DiscoveryInterface, c clock.Clock, ttl time.Duration) *discoveryCache {
	return &discoveryCache{client: dc, clock: c, ttl: ttl}
}

// resources returns the snapshot, refreshing it if stale. On an error with
// no partial result the previous snapshot is kept.
func (d *discoveryCache) resources() []apiResource {
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

func flatten(lists []*metav1.APIResourceList) []apiResource {
	out := []apiResource{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") { // subresources are never selected
				continue
			}
			out = append(out, apiResource{gv: gv, name: r.Name, namespaced: r.Namespaced, verbs: r.Verbs})
		}
	}
	return out
}

// groupMatches applies GlobalProxySettings' apiGroups pattern rules: "" is
// the core group only, "*" is the only wildcard (dots are literal), and a
// pattern containing "/" matches "<group>/<version>".
func groupMatches(pattern string, gv schema.GroupVersion) bool {
	if strings.Contains(pattern, "/") {
		return glob(pattern, gv.Group+"/"+gv.Version)
	}
	if pattern == "" {
		return gv.Group == ""
	}
	return glob(pattern, gv.Group)
}

// glob matches s against p where '*' stands for any (possibly empty) run of
// characters and everything else is literal.
func glob(p, s string) bool {
	parts := strings.Split(p, "*")
	if len(parts) == 1 {
		return p == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return strings.HasSuffix(s, last)
}
