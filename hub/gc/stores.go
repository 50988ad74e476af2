package gc

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/wharfhub/wharf/hub/cluster"
)

// registryStore reaches a built-in resource through its registry store,
// in process.
type registryStore struct{ s Store }

func (r registryStore) get(ctx context.Context, name string) (metav1.Object, error) {
	obj, err := r.s.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return meta.Accessor(obj)
}

func (r registryStore) update(ctx context.Context, name string, uid types.UID, mutate func(metav1.Object)) error {
	info := rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		obj := old.DeepCopyObject()
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		if m.GetUID() != uid {
			return nil, apierrors.NewConflict(schema.GroupResource{}, name, fmt.Errorf("uid changed"))
		}
		mutate(m)
		return obj, nil
	})
	_, _, err := r.s.Update(ctx, name, info, nil, nil, false, &metav1.UpdateOptions{})
	return err
}

func (r registryStore) delete(ctx context.Context, name string, uid types.UID, policy metav1.DeletionPropagation) error {
	_, _, err := r.s.Delete(ctx, name, rest.ValidateAllObjectFunc,
		&metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
	return err
}

// metadataStore reaches the instances of one custom resource through the
// hub's own API (a loopback metadata client whose transport addresses the
// context's cluster, see clusterTransport), so every write passes the
// custom resource handler: validation, admission and its registry's
// deletion rules, exactly as a client's would. Only metadata is read.
type metadataStore struct {
	client     metadata.Interface
	gvr        schema.GroupVersionResource
	namespaced bool
}

func (s metadataStore) resource(ctx context.Context) metadata.ResourceInterface {
	if !s.namespaced {
		return s.client.Resource(s.gvr)
	}
	return s.client.Resource(s.gvr).Namespace(request.NamespaceValue(ctx))
}

func (s metadataStore) get(ctx context.Context, name string) (metav1.Object, error) {
	return s.resource(ctx).Get(ctx, name, metav1.GetOptions{})
}

// update writes ownerReferences and finalizers with a merge patch carrying
// the uid and resourceVersion read: a concurrent change conflicts and is
// read again, and another object of the same name is never patched.
func (s metadataStore) update(ctx context.Context, name string, uid types.UID, mutate func(metav1.Object)) error {
	var err error
	for i := 0; i < 5; i++ {
		var cur *metav1.PartialObjectMetadata
		cur, err = s.resource(ctx).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != uid {
			return apierrors.NewConflict(s.gvr.GroupResource(), name, fmt.Errorf("uid changed"))
		}
		next := cur.DeepCopy()
		mutate(next)
		patch, perr := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{
			"uid": uid, "resourceVersion": cur.ResourceVersion,
			"ownerReferences": next.OwnerReferences, "finalizers": next.Finalizers,
		}})
		if perr != nil {
			return fmt.Errorf("encoding metadata patch: %w", perr)
		}
		_, err = s.resource(ctx).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

func (s metadataStore) delete(ctx context.Context, name string, uid types.UID, policy metav1.DeletionPropagation) error {
	return s.resource(ctx).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
}

// listWatch lists and watches the resource in every logical cluster
// (/clusters/*).
func (s metadataStore) listWatch() cache.ListerWatcher {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return s.client.Resource(s.gvr).List(cluster.WithWildcard(ctx), opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return s.client.Resource(s.gvr).Watch(cluster.WithWildcard(ctx), opts)
		},
	}
}
