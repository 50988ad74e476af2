package apiview

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
)

// AggregatedGroupVersion is a group version a workspace's APIService
// routes to a provider (hub/aggregation), with the provider's last good
// discovery answer (nil before the first).
type AggregatedGroupVersion struct {
	Group, Version                        string
	GroupPriorityMinimum, VersionPriority int32
	Resources                             *metav1.APIResourceList
}

// Aggregated lists the aggregated group versions of one workspace.
type Aggregated interface {
	Discovery(ctx context.Context, id cluster.ID) []AggregatedGroupVersion
}

// SetAggregated makes v merge a's group versions into each workspace's
// discovery (and only into that workspace's).
func (v *View) SetAggregated(a Aggregated) { v.aggregated.Store(&a) }

// aggregatedOf returns the aggregated group versions of the request's
// workspace; none for the wildcard or before SetAggregated.
func (v *View) aggregatedOf(ctx context.Context) []AggregatedGroupVersion {
	a := v.aggregated.Load()
	if a == nil || cluster.IsWildcard(ctx) {
		return nil
	}
	id, ok := cluster.From(ctx)
	if !ok {
		return nil
	}
	return (*a).Discovery(ctx, id)
}

// serveAggregated answers /apis/<g> and /apis/<g>/<v> when the workspace
// routes that group to a provider, and reports whether it did.
func (v *View) serveAggregated(w http.ResponseWriter, r *http.Request, parts []string, delegate http.Handler) bool {
	agg := v.aggregatedOf(r.Context())
	var mine []AggregatedGroupVersion
	for _, a := range agg {
		if a.Group == parts[1] {
			mine = append(mine, a)
		}
	}
	if len(mine) == 0 {
		return false
	}
	if len(parts) == 3 {
		for _, a := range mine {
			if a.Version != parts[2] {
				continue
			}
			if a.Resources == nil {
				// Not fetched yet: kube-aggregator's answer for an
				// APIService it cannot reach.
				writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "service unavailable")
				return true
			}
			writeJSON(w, a.Resources)
			return true
		}
		return false
	}
	// /apis/<g>: the delegate's versions (a hub-wide CRD of the group)
	// with the aggregated ones in place of the same versions.
	group := metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: parts[1]}
	if c := internalGet(delegate, r, ""); c.code == http.StatusOK {
		if err := json.Unmarshal(c.body.Bytes(), &group); err != nil {
			klog.V(2).InfoS("Group discovery not understood, aggregated versions only", "group", parts[1], "err", err)
			group.Versions = nil
		}
	}
	mergeGroup(&group, mine)
	writeJSON(w, &group)
	return true
}

// mergeGroup puts the aggregated versions into g, first (the APIService
// wins), the first one preferred.
func mergeGroup(g *metav1.APIGroup, agg []AggregatedGroupVersion) {
	var versions []metav1.GroupVersionForDiscovery
	mine := map[string]bool{}
	for _, a := range agg {
		mine[a.Version] = true
		versions = append(versions, metav1.GroupVersionForDiscovery{GroupVersion: a.Group + "/" + a.Version, Version: a.Version})
	}
	for _, gv := range g.Versions {
		if !mine[gv.Version] {
			versions = append(versions, gv)
		}
	}
	g.Versions = versions
	g.PreferredVersion = versions[0]
}

// merge adds the workspace's aggregated groups to an /apis document and
// reports whether it changed it.
func (v *View) merge(r *http.Request, obj any) bool {
	agg := v.aggregatedOf(r.Context())
	if len(agg) == 0 {
		return false
	}
	byGroup := map[string][]AggregatedGroupVersion{}
	var order []string
	for _, a := range agg {
		if byGroup[a.Group] == nil {
			order = append(order, a.Group)
		}
		byGroup[a.Group] = append(byGroup[a.Group], a)
	}
	switch l := obj.(type) {
	case *metav1.APIGroupList:
		for _, name := range order {
			i := indexOf(l.Groups, func(g metav1.APIGroup) bool { return g.Name == name })
			if i < 0 {
				l.Groups = append(l.Groups, metav1.APIGroup{Name: name})
				i = len(l.Groups) - 1
			}
			mergeGroup(&l.Groups[i], byGroup[name])
		}
	case *apidiscoveryv2.APIGroupDiscoveryList:
		for _, name := range order {
			i := indexOf(l.Items, func(g apidiscoveryv2.APIGroupDiscovery) bool { return g.Name == name })
			if i < 0 {
				l.Items = append(l.Items, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: name}})
				i = len(l.Items) - 1
			}
			mergeDiscovery(&l.Items[i], byGroup[name])
		}
	default:
		return false
	}
	return true
}

func indexOf[T any](items []T, match func(T) bool) int {
	for i, it := range items {
		if match(it) {
			return i
		}
	}
	return -1
}

// mergeDiscovery is mergeGroup for aggregated discovery.
func mergeDiscovery(g *apidiscoveryv2.APIGroupDiscovery, agg []AggregatedGroupVersion) {
	var versions []apidiscoveryv2.APIVersionDiscovery
	mine := map[string]bool{}
	for _, a := range agg {
		mine[a.Version] = true
		versions = append(versions, versionDiscovery(a))
	}
	for _, v := range g.Versions {
		if !mine[v.Version] {
			versions = append(versions, v)
		}
	}
	g.Versions = versions
}

// versionDiscovery converts a provider's APIResourceList; before the
// first good answer the version is listed stale with no resources, as
// kube-apiserver lists an aggregated API it cannot reach.
func versionDiscovery(a AggregatedGroupVersion) apidiscoveryv2.APIVersionDiscovery {
	out := apidiscoveryv2.APIVersionDiscovery{Version: a.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
	if a.Resources == nil {
		out.Freshness = apidiscoveryv2.DiscoveryFreshnessStale
		return out
	}
	subs := map[string][]apidiscoveryv2.APISubresourceDiscovery{}
	for _, r := range a.Resources.APIResources {
		parent, sub, ok := strings.Cut(r.Name, "/")
		if !ok {
			continue
		}
		subs[parent] = append(subs[parent], apidiscoveryv2.APISubresourceDiscovery{
			Subresource: sub, ResponseKind: kindOf(a, r), Verbs: r.Verbs,
		})
	}
	for _, r := range a.Resources.APIResources {
		if strings.Contains(r.Name, "/") {
			continue
		}
		scope := apidiscoveryv2.ScopeCluster
		if r.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		out.Resources = append(out.Resources, apidiscoveryv2.APIResourceDiscovery{
			Resource: r.Name, ResponseKind: kindOf(a, r), Scope: scope, SingularResource: r.SingularName,
			Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories, Subresources: subs[r.Name],
		})
	}
	return out
}

func kindOf(a AggregatedGroupVersion, r metav1.APIResource) *metav1.GroupVersionKind {
	g, v := r.Group, r.Version
	if g == "" && v == "" {
		g, v = a.Group, a.Version
	}
	return &metav1.GroupVersionKind{Group: g, Version: v, Kind: r.Kind}
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	body, _ := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Code: int32(code), Reason: reason, Message: msg,
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

func writeJSON(w http.ResponseWriter, obj any) {
	body, err := json.Marshal(obj)
	if err != nil {
		http.Error(w, "encoding discovery failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
