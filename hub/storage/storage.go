package storage

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/selectors"
)

// clusterStorage rewrites keys by the context's cluster before handing calls
// to the delegate. It is the storage.Interface every registry sees.
type clusterStorage struct {
	delegate       storage.Interface
	resourcePrefix string
	scope          Scope
	// byCluster: the store below indexes watchers by cluster (trigger.go).
	byCluster bool
}

var _ storage.Interface = &clusterStorage{}

// errNoCluster is wrapped in an Internal error: reaching storage without a
// cluster is a programming error in the hub, never a client mistake.
func (s *clusterStorage) errNoCluster(op, key string) error {
	return errors.NewInternalError(fmt.Errorf("storage %s of %q without a logical cluster in context: refused", op, key))
}

// target returns the cluster a single-object call addresses.
func (s *clusterStorage) target(ctx context.Context, op, key string) (cluster.ID, error) {
	if s.scope == GlobalScope {
		return cluster.Global, nil
	}
	if id, ok := cluster.From(ctx); ok {
		return id, nil
	}
	return "", s.errNoCluster(op, key)
}

// objectKey rewrites the key of a single-object call. Wildcard contexts are
// refused: a get or write must name exactly one cluster.
func (s *clusterStorage) objectKey(ctx context.Context, op, key string) (cluster.ID, string, error) {
	id, err := s.target(ctx, op, key)
	if err != nil {
		return "", "", err
	}
	k, err := ClusterKey(s.resourcePrefix, key, id)
	if err != nil {
		return "", "", errors.NewInternalError(err)
	}
	return id, k, nil
}

// collectionKey rewrites the key of a list or watch. A wildcard context
// passes the key through unchanged, and only for the whole resource: a
// namespaced wildcard would match <prefix>/<namespace> as if the namespace
// were a cluster id.
func (s *clusterStorage) collectionKey(ctx context.Context, op, key string, recursive bool) (string, error) {
	if s.scope != GlobalScope {
		if _, ok := cluster.From(ctx); !ok && cluster.IsWildcard(ctx) {
			if !recursive || key != s.resourcePrefix {
				return "", errors.NewBadRequest("wildcard " + op + " is only supported across a whole resource")
			}
			return key, nil
		}
	}
	_, k, err := s.objectKey(ctx, op, key)
	return k, err
}

func (s *clusterStorage) Versioner() storage.Versioner { return s.delegate.Versioner() }

func (s *clusterStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	id, k, err := s.objectKey(ctx, "create", key)
	if err != nil {
		return err
	}
	if err := setCluster(obj, id); err != nil {
		return errors.NewInternalError(err)
	}
	return s.delegate.Create(ctx, k, obj, out, ttl)
}

func (s *clusterStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	_, k, err := s.objectKey(ctx, "delete", key)
	if err != nil {
		return err
	}
	return s.delegate.Delete(ctx, k, out, preconditions, validateDeletion, cachedExistingObject, opts)
}

func (s *clusterStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	k, err := s.collectionKey(ctx, "watch", key, opts.Recursive)
	if err != nil {
		return nil, err
	}
	// Selector evaluation is charged to the caller's tenant and stops
	// when the request ends (hub/selectors). The cluster term byCluster
	// adds after it is the hub's own and not charged.
	opts.Predicate = selectors.WrapWatch(ctx, opts.Predicate)
	if id, ok := cluster.From(ctx); ok && s.byCluster {
		opts.Predicate = byCluster(opts.Predicate, id)
	}
	w, err := s.delegate.Watch(ctx, k, opts)
	if err != nil {
		return nil, err
	}
	// A stand-in for a refused stored value (guard.go) is never an event.
	// An update that turned a good object into one is dropped as well,
	// which leaves watchers with the last good version; a relist drops it.
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		_, q := quarantinedKey(e.Object)
		return e, !q
	}), nil
}

func (s *clusterStorage) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	_, k, err := s.objectKey(ctx, "get", key)
	if err != nil {
		return err
	}
	if err := s.delegate.Get(ctx, k, opts, objPtr); err != nil {
		return err
	}
	if _, q := quarantinedKey(objPtr); q {
		return errQuarantined(k)
	}
	return nil
}

// errQuarantined answers a request for a single object whose stored value
// the read guard refused. It is the hub's data that is broken, not the
// request: a 500, the same for every reason, naming no content. Writes are
// refused too, so nothing overwrites data the hub could not read; the key
// must be repaired in etcd (the hub log names it).
func errQuarantined(key string) error {
	return errors.NewInternalError(fmt.Errorf("the stored object at %q cannot be served; see the hub log", key))
}

func (s *clusterStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	k, err := s.collectionKey(ctx, "list", key, opts.Recursive)
	if err != nil {
		return err
	}
	opts.Predicate = selectors.Wrap(ctx, opts.Predicate)
	if err := s.delegate.GetList(ctx, k, opts, listObj); err != nil {
		return err
	}
	// What the list looked at tells hub/fairness its cost.
	selectors.RecordList(ctx, opts.Predicate, listObj)
	return dropQuarantined(listObj)
}

// dropQuarantined removes stand-ins for refused stored values (guard.go)
// from a list. Lists without any, nearly all of them, are left untouched.
func dropQuarantined(listObj runtime.Object) error {
	found := false
	if err := meta.EachListItem(listObj, func(o runtime.Object) error {
		_, q := quarantinedKey(o)
		found = found || q
		return nil
	}); err != nil || !found {
		return err
	}
	items, err := meta.ExtractList(listObj)
	if err != nil {
		return err
	}
	kept := items[:0]
	for _, o := range items {
		if _, q := quarantinedKey(o); !q {
			kept = append(kept, o)
		}
	}
	return meta.SetList(listObj, kept)
}

func (s *clusterStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	id, k, err := s.objectKey(ctx, "update", key)
	if err != nil {
		return err
	}
	// Stamp the annotation on whatever the update produces, so a client
	// cannot remove or change it with an update or a patch.
	stamped := func(input runtime.Object, res storage.ResponseMeta) (runtime.Object, *uint64, error) {
		if _, q := quarantinedKey(input); q {
			return nil, nil, errQuarantined(k)
		}
		out, ttl, err := tryUpdate(input, res)
		if err != nil || out == nil {
			return out, ttl, err
		}
		if err := setCluster(out, id); err != nil {
			return nil, nil, errors.NewInternalError(err)
		}
		return out, ttl, nil
	}
	return s.delegate.GuaranteedUpdate(ctx, k, destination, ignoreNotFound, preconditions, stamped, cachedExistingObject)
}

func (s *clusterStorage) Stats(ctx context.Context) (storage.Stats, error) {
	return s.delegate.Stats(ctx)
}

func (s *clusterStorage) ReadinessCheck() error { return s.delegate.ReadinessCheck() }

func (s *clusterStorage) RequestWatchProgress(ctx context.Context) error {
	return s.delegate.RequestWatchProgress(ctx)
}

func (s *clusterStorage) GetCurrentResourceVersion(ctx context.Context) (uint64, error) {
	return s.delegate.GetCurrentResourceVersion(ctx)
}

func (s *clusterStorage) EnableResourceSizeEstimation(f storage.KeysFunc) error {
	return s.delegate.EnableResourceSizeEstimation(f)
}

func (s *clusterStorage) CompactRevision() int64 { return s.delegate.CompactRevision() }
