package workspaces

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/namespaces"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// Content deletes what a logical cluster holds through its API, so that
// every object's finalizers and every controller watching it see the
// deletion, before the Controller purges what is left.
type Content interface {
	// Delete asks for the deletion of the content of cluster id and
	// reports what still exists. It is called repeatedly until nothing
	// remains or the grace period ends, so it must be idempotent.
	Delete(ctx context.Context, id cluster.ID) (Remaining, error)
}

// APIContent is Content over the hub's own API (the loopback client), in
// the order kcp and the namespace controller use: everything but
// namespaces and RBAC first, then namespaces (whose own deletion runs),
// then RBAC, so that controllers keep their permissions while they clean
// up. Child Workspaces are the Controller's (see deleteChildren).
type APIContent struct {
	loopback *rest.Config
}

// NewAPIContent deletes content as the loopback identity. The cluster
// addressed is always the one the index records; see Controller.finish.
func NewAPIContent(loopback *rest.Config) *APIContent {
	return &APIContent{loopback: loopback}
}

// notContent are resources every workspace serves that are not its
// content. CustomResourceDefinitions and CatalogEntries are hub-wide: the
// same objects answer in every workspace, so deleting them from one
// workspace would delete them for all. Child Workspaces are deleted by the
// Controller, each through its own deletion.
var notContent = sets.New(
	schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
	schema.GroupResource{Group: "providers.wharf.dev", Resource: "catalogentries"},
	tenancyv1alpha1.Resource("workspaces"),
)

// deletion phases of APIContent.
const (
	phaseContent = iota
	phaseNamespaces
	phaseRBAC
	phases
)

type listed struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	collection bool // deletecollection is served
	items      []metav1.PartialObjectMetadata
}

// Delete implements Content.
func (a *APIContent) Delete(ctx context.Context, id cluster.ID) (Remaining, error) {
	cfg := rest.CopyConfig(a.loopback)
	cfg.Host = strings.TrimSuffix(cfg.Host, "/") + "/clusters/" + string(id)
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return Remaining{}, fmt.Errorf("discovery client: %w", err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return Remaining{}, fmt.Errorf("metadata client: %w", err)
	}
	lists, err := disco.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return Remaining{}, fmt.Errorf("discovering resources of %s: %w", id, err)
	}
	logger := klog.FromContext(ctx).WithValues("cluster", id)
	if err != nil {
		// Some groups did not answer; delete what the others serve and
		// count the rest as remaining when the grace period ends.
		logger.V(2).Info("Partial discovery while deleting workspace content", "err", err)
	}
	var byPhase [phases][]listed
	var rem Remaining
	pending := [phases]int{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			verbs := sets.New(r.Verbs...)
			if strings.Contains(r.Name, "/") || !verbs.Has("list") || !verbs.Has("delete") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			if notContent.Has(gvr.GroupResource()) {
				continue
			}
			objs, err := meta.Resource(gvr).List(ctx, metav1.ListOptions{})
			if err != nil {
				logger.Error(err, "Listing workspace content", "resource", gvr)
				continue
			}
			if !ownedBy(objs.Items, id) {
				// Not stored per workspace (hub-wide, like CRDs): never
				// this workspace's to delete.
				logger.V(2).Info("Skipping resource not stored per workspace", "resource", gvr)
				continue
			}
			phase := phaseOf(gvr.GroupResource())
			l := listed{gvr: gvr, namespaced: r.Namespaced, collection: verbs.Has("deletecollection")}
			for _, o := range objs.Items {
				if phase == phaseNamespaces && namespaces.Immortal.Has(o.Name) {
					// They cannot be deleted and are purged with the rest.
					continue
				}
				rem.Add(gvr.GroupResource(), &o)
				pending[phase]++
				l.items = append(l.items, o)
			}
			byPhase[phase] = append(byPhase[phase], l)
		}
	}
	for phase := 0; phase < phases; phase++ {
		for _, l := range byPhase[phase] {
			a.deleteAll(ctx, meta, l)
		}
		if pending[phase] > 0 {
			// Later phases wait until this one is gone.
			break
		}
	}
	return rem, nil
}

// ownedBy reports whether every object carries the cluster annotation of
// id, which storage sets from the key each object is stored under. A
// resource whose objects do not is shared by workspaces, and deleting it
// from one would delete it from all.
func ownedBy(items []metav1.PartialObjectMetadata, id cluster.ID) bool {
	for _, o := range items {
		if o.Annotations[wstorage.ClusterAnnotation] != string(id) {
			return false
		}
	}
	return true
}

func phaseOf(gr schema.GroupResource) int {
	switch {
	case gr.Group == "rbac.authorization.k8s.io":
		return phaseRBAC
	case gr.Group == "" && gr.Resource == "namespaces":
		return phaseNamespaces
	default:
		return phaseContent
	}
}

// deleteAll asks for the deletion of every listed object not already being
// deleted: per namespace by deletecollection where served, else one by one.
// Failures are logged; what they leave is reported as remaining.
func (a *APIContent) deleteAll(ctx context.Context, meta metadata.Interface, l listed) {
	logger := klog.FromContext(ctx)
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	done := sets.New[string]()
	for _, o := range l.items {
		if o.DeletionTimestamp != nil {
			continue
		}
		var err error
		switch {
		case l.collection && l.namespaced:
			if done.Has(o.Namespace) {
				continue
			}
			done.Insert(o.Namespace)
			err = meta.Resource(l.gvr).Namespace(o.Namespace).DeleteCollection(ctx, opts, metav1.ListOptions{})
		case l.collection:
			if done.Has("") {
				continue
			}
			done.Insert("")
			err = meta.Resource(l.gvr).DeleteCollection(ctx, opts, metav1.ListOptions{})
		case l.namespaced:
			err = meta.Resource(l.gvr).Namespace(o.Namespace).Delete(ctx, o.Name, opts)
		default:
			err = meta.Resource(l.gvr).Delete(ctx, o.Name, opts)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			logger.Error(err, "Deleting workspace content", "resource", l.gvr, "namespace", o.Namespace, "name", o.Name)
		}
	}
}
