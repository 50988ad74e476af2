package registry

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	storageerr "k8s.io/apiserver/pkg/storage/errors"
	"k8s.io/apiserver/pkg/util/dryrun"
)

// Delete implements rest.GracefulDeleter the way upstream's namespace
// storage does. The first delete of a namespace that spec.finalizers hold
// only marks it: deletionTimestamp and phase Terminating, in one write;
// the namespace controller then removes the content and releases the hold
// through /finalize, which deletes the namespace. A delete of a namespace
// already terminating and still held answers the namespace as it is. A
// namespace with no spec finalizers is deleted by the generic store
// (metadata finalizers, which are the client's, still hold it).
//
// Admission (hub/namespaces) sees every variant: it refuses default and
// kube-system whatever the options (dry run, preconditions, propagation).
//
// Unlike upstream, the first delete adds no orphan or foregroundDeletion
// finalizer for the propagation policy: the hub's garbage collector does
// not own namespaces, so such a finalizer would hold the namespace forever.
func (n *NamespaceStorage) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	obj, err := n.store.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	ns := obj.(*corev1.Namespace)
	held := len(ns.Spec.Finalizers) > 0 || hasLegacy(ns)
	if !held {
		return n.store.Delete(ctx, name, deleteValidation, options)
	}
	if options == nil {
		options = metav1.NewDeleteOptions(0)
	}
	pre := storage.Preconditions{UID: &ns.UID}
	if options.Preconditions != nil {
		if uid := options.Preconditions.UID; uid != nil && *uid != ns.UID {
			return nil, false, apierrors.NewConflict(corev1.Resource("namespaces"), name,
				fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *uid, ns.UID))
		}
		if rv := options.Preconditions.ResourceVersion; rv != nil {
			if *rv != ns.ResourceVersion {
				return nil, false, apierrors.NewConflict(corev1.Resource("namespaces"), name,
					fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *rv, ns.ResourceVersion))
			}
			pre.ResourceVersion = rv
		}
	}
	if deleteValidation != nil {
		if err := deleteValidation(ctx, ns); err != nil {
			return nil, false, err
		}
	}
	if !ns.DeletionTimestamp.IsZero() {
		return ns, false, nil
	}
	key, err := n.store.KeyFunc(ctx, name)
	if err != nil {
		return nil, false, err
	}
	out := n.store.NewFunc()
	err = n.store.Storage.GuaranteedUpdate(ctx, key, out, false, &pre, storage.SimpleUpdate(func(existing runtime.Object) (runtime.Object, error) {
		cur, ok := existing.(*corev1.Namespace)
		if !ok {
			return nil, fmt.Errorf("expected *corev1.Namespace, got %T", existing)
		}
		if cur.DeletionTimestamp.IsZero() {
			now := metav1.Now()
			cur.DeletionTimestamp = &now
		}
		cur.Status.Phase = corev1.NamespaceTerminating
		// A namespace of an earlier hub moves its hold to spec.finalizers.
		migrateLegacy(cur, cur, true)
		return cur, nil
	}), dryrun.IsDryRun(options.DryRun), nil)
	if err != nil {
		err = storageerr.InterpretGetError(err, corev1.Resource("namespaces"), name)
		err = storageerr.InterpretUpdateError(err, corev1.Resource("namespaces"), name)
		if _, ok := err.(*apierrors.StatusError); !ok {
			err = apierrors.NewInternalError(fmt.Errorf("marking namespace %s for deletion: %w", name, err))
		}
		return nil, false, err
	}
	return out, false, nil
}
