package storage

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/wharfhub/wharf/hub/cluster"
)

// DryRunStamp is a mutating admission plugin that stamps the cluster
// annotation on dry-run writes, exactly as the storage decorator stamps it
// on real ones.
//
// Why: upstream's dry-run storage answers a dry-run create or update from
// the request's object without calling the storage below it, so the
// decorator never sees the write. A client's forged wharf.dev/cluster would
// otherwise come back in the answer, telling the client its object belongs
// to another workspace (nothing is stored either way). Admission runs on
// every write path, dry-run included, after the client's object is final
// except for the strategy, which never touches this annotation.
type DryRunStamp struct {
	*admission.Handler
	// Global lists the resources stored hub-wide (cluster.Global), as the
	// RESTOptionsGetter's Global does.
	Global map[schema.GroupResource]bool
}

var _ admission.MutationInterface = (*DryRunStamp)(nil)

// NewDryRunStamp returns the plugin for creates and updates.
func NewDryRunStamp(global map[schema.GroupResource]bool) *DryRunStamp {
	return &DryRunStamp{Handler: admission.NewHandler(admission.Create, admission.Update), Global: global}
}

// unstoredGroups answer requests with objects that are never stored
// (access and token reviews); their answers carry no cluster, as upstream.
var unstoredGroups = map[string]bool{"authentication.k8s.io": true, "authorization.k8s.io": true}

// Admit implements admission.MutationInterface.
func (d *DryRunStamp) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !a.IsDryRun() || a.GetObject() == nil || unstoredGroups[a.GetResource().Group] || a.GetSubresource() == "token" {
		return nil
	}
	gr := a.GetResource().GroupResource()
	id := cluster.Global
	if !d.Global[gr] {
		var ok bool
		if id, ok = cluster.From(ctx); !ok {
			// The storage call would fail without a cluster; so does the
			// dry run below (its existence check reads storage).
			return nil
		}
	}
	if _, err := meta.Accessor(a.GetObject()); err != nil {
		return nil // not an object with metadata: nothing to stamp
	}
	return setCluster(a.GetObject(), id)
}
