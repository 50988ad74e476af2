package core

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/providers/tenantfilter/rules"
)

// liveDiscovery is the core's picture of what the downstream serves. It is
// refreshed on a miss (at most once per minInterval, so a client asking for
// nonsense cannot hammer the downstream) and so follows CRDs installed
// later without a restart. A group whose discovery fails (an aggregated API
// whose service is down, ErrGroupDiscoveryFailed) is left out and the rest
// is kept: one broken APIService never stalls or breaks the filter.
type liveDiscovery struct {
	client      discovery.DiscoveryInterface
	clock       clock.Clock
	minInterval time.Duration

	refreshMu sync.Mutex // serialises refreshes; lookups wait for a running one

	mu        sync.RWMutex // guards the fields below
	byGVR     map[schema.GroupVersionResource]ResourceInfo
	preferred map[schema.GroupResource]ResourceInfo
	last      time.Time // when the last refresh started
	failed    []schema.GroupVersion
	// all is byGVR in the grants engine's terms, built once per refresh
	// so that a request does not copy discovery.
	all []rules.Resource
}

func newLiveDiscovery(client discovery.DiscoveryInterface, clk clock.Clock) *liveDiscovery {
	return &liveDiscovery{client: client, clock: clk, minInterval: 2 * time.Second}
}

// refresh re-reads discovery. It returns an error only when nothing at all
// could be read; partial failures are logged and tolerated.
func (d *liveDiscovery) refresh() error {
	d.refreshMu.Lock()
	defer d.refreshMu.Unlock()
	d.mu.Lock()
	d.last = d.clock.Now()
	d.mu.Unlock()

	groups, lists, err := d.client.ServerGroupsAndResources()
	var failed []schema.GroupVersion
	if err != nil {
		gdf, ok := err.(*discovery.ErrGroupDiscoveryFailed)
		if !ok || (len(lists) == 0 && len(groups) == 0) {
			return fmt.Errorf("discovery: %w", err)
		}
		for gv := range gdf.Groups {
			failed = append(failed, gv)
		}
		klog.V(1).InfoS("tenant filter: some API groups failed discovery; serving the rest", "groups", failed)
	}
	preferredVersion := map[string]string{}
	for _, g := range groups {
		preferredVersion[g.Name] = g.PreferredVersion.Version
	}
	byGVR := map[schema.GroupVersionResource]ResourceInfo{}
	preferred := map[schema.GroupResource]ResourceInfo{}
	all := []rules.Resource{}
	for _, list := range lists {
		if list == nil {
			continue
		}
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") { // subresources are routed with their parent
				continue
			}
			info := resourceInfo(gv, r)
			byGVR[info.GVR] = info
			all = append(all, rules.Resource{Group: gv.Group, Version: gv.Version, Resource: r.Name, Namespaced: r.Namespaced, Verbs: info.Verbs})
			gr := info.GVR.GroupResource()
			if _, ok := preferred[gr]; !ok || preferredVersion[gv.Group] == gv.Version {
				preferred[gr] = info
			}
		}
	}
	d.mu.Lock()
	d.byGVR, d.preferred, d.failed, d.all = byGVR, preferred, failed, all
	d.mu.Unlock()
	return nil
}

func resourceInfo(gv schema.GroupVersion, r metav1.APIResource) ResourceInfo {
	return ResourceInfo{
		GVR:        gv.WithResource(r.Name),
		Kind:       r.Kind,
		Namespaced: r.Namespaced,
		Verbs:      append([]string(nil), r.Verbs...),
	}
}

// lookup resolves a resource; version "" means the preferred version. A
// miss triggers a rate-limited refresh, so a CRD installed a moment ago is
// found on its first request.
func (d *liveDiscovery) lookup(group, version, resource string) (ResourceInfo, bool) {
	if info, ok := d.find(group, version, resource); ok {
		return info, true
	}
	d.mu.RLock()
	stale := d.byGVR == nil || d.clock.Since(d.last) >= d.minInterval
	d.mu.RUnlock()
	if !stale {
		return ResourceInfo{}, false
	}
	if err := d.refresh(); err != nil {
		klog.V(1).InfoS("tenant filter: discovery refresh failed", "err", err)
		return ResourceInfo{}, false
	}
	return d.find(group, version, resource)
}

func (d *liveDiscovery) find(group, version, resource string) (ResourceInfo, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if version == "" {
		info, ok := d.preferred[schema.GroupResource{Group: group, Resource: resource}]
		return info, ok
	}
	info, ok := d.byGVR[schema.GroupVersionResource{Group: group, Version: version, Resource: resource}]
	return info, ok
}

// clusterScoped lists every discovered cluster-scoped resource in its
// preferred version, sorted for stable output.
func (d *liveDiscovery) clusterScoped() []ResourceInfo {
	d.mu.RLock()
	if d.byGVR == nil {
		d.mu.RUnlock()
		if err := d.refresh(); err != nil {
			klog.V(1).InfoS("tenant filter: discovery refresh failed", "err", err)
		}
		d.mu.RLock()
	}
	defer d.mu.RUnlock()
	var out []ResourceInfo
	for _, info := range d.preferred {
		if !info.Namespaced {
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GVR.String() < out[j].GVR.String() })
	return out
}

// discovered is every resource of the last refresh (all versions,
// namespaced included), reading discovery first if it never was.
func (d *liveDiscovery) discovered() []rules.Resource {
	d.mu.RLock()
	never := d.byGVR == nil
	d.mu.RUnlock()
	if never {
		if err := d.refresh(); err != nil {
			klog.V(1).InfoS("tenant filter: discovery refresh failed", "err", err)
		}
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.all
}

// failedGroups are the group versions the last refresh could not read.
func (d *liveDiscovery) failedGroups() []schema.GroupVersion {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return append([]schema.GroupVersion(nil), d.failed...)
}

// discoveryTimeout bounds one discovery read, so a slow aggregated API
// cannot hold a request for long.
const discoveryTimeout = 10 * time.Second
