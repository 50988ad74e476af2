package quota

import (
	"context"
	"path"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/wharfhub/wharf/hub/cluster"
)

// Wrap counts the writes of one per-workspace resource's storage. It is
// installed inside the hub's cluster-keying decorator (hub/storage), so
// objects arrive with their cluster annotation, as they are stored.
func (a *Accountant) Wrap(s storage.Interface, config *storagebackend.ConfigForResource) storage.Interface {
	if a == nil {
		return s
	}
	c := &countedStorage{Interface: s, a: a, gr: config.GroupResource, sizer: sizer{codec: config.Codec},
		workspaces: config.GroupResource == workspacesResource}
	// Admission measures writes of gr with this store's codec (the last
	// one built: a custom resource's store is rebuilt when its CRD
	// changes, and one is built per served version).
	a.stores.Store(config.GroupResource, c)
	return c
}

// storeOf is the counting store of gr, nil for resources not counted
// (hub-wide ones, requests that store nothing).
func (a *Accountant) storeOf(gr schema.GroupResource) *countedStorage {
	s, _ := a.stores.Load(gr)
	c, _ := s.(*countedStorage)
	return c
}

type countedStorage struct {
	storage.Interface
	a          *Accountant
	gr         schema.GroupResource
	sizer      sizer
	workspaces bool
}

// one is the usage of one stored object of size n.
func (s *countedStorage) one(n int64) Usage {
	u := Usage{Objects: 1, Bytes: n}
	if s.workspaces {
		u.Workspaces = 1
	}
	return u
}

func (s *countedStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	id, ok := cluster.From(ctx)
	if !ok {
		return s.Interface.Create(ctx, key, obj, out, ttl)
	}
	if err := s.a.paceWrite(ctx, s.gr, id); err != nil {
		return err
	}
	var n int64
	if m := s.take(ctx, id, obj); m != nil && !m.update {
		n = m.after
	} else {
		var err error
		if n, err = s.sizer.size(obj); err != nil {
			return apierrors.NewInternalError(err)
		}
	}
	d := s.one(n)
	if err := s.a.reserve(ctx, s.gr, path.Base(key), id, d, s.a.enforced(ctx, s.gr, "create")); err != nil {
		return err
	}
	if err := s.Interface.Create(ctx, key, obj, out, ttl); err != nil {
		s.a.release(ctx, id, d)
		return err
	}
	return nil
}

func (s *countedStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	id, ok := cluster.From(ctx)
	if ok {
		if err := s.a.paceWrite(ctx, s.gr, id); err != nil {
			return err
		}
	}
	if err := s.Interface.Delete(ctx, key, out, preconditions, validateDeletion, cachedExistingObject, opts); err != nil || !ok {
		return err
	}
	// out holds the object as it was deleted, with the revision of its
	// deletion, which the store never wrote (size leaves it out).
	if n, err := s.sizer.size(out); err == nil {
		s.a.release(ctx, id, s.one(n))
	}
	return nil
}

func (s *countedStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	id, ok := cluster.From(ctx)
	if !ok {
		return s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cachedExistingObject)
	}
	if err := s.a.paceWrite(ctx, s.gr, id); err != nil {
		return err
	}
	enforce := s.a.enforced(ctx, s.gr, "update")
	// held is what this call has reserved so far; last is the change of
	// the attempt that tryUpdate produced last. A conflict makes the
	// store call tryUpdate again on a fresher object: the reservation is
	// topped up when that attempt grows more, and settled at the end.
	var held, last Usage
	counted := func(input runtime.Object, res storage.ResponseMeta) (runtime.Object, *uint64, error) {
		// The stored object's size, taken before tryUpdate: it may change
		// input in place and return it (the registry's delete of an
		// object with finalizers stamps its deletion that way, which the
		// update must be charged for).
		var before int64
		if res.ResourceVersion != 0 {
			var err error
			if before, err = s.sizer.size(input); err != nil {
				return nil, nil, apierrors.NewInternalError(err)
			}
		}
		// Admission runs inside tryUpdate, once per attempt: only what it
		// measures in this attempt describes this attempt's object.
		_ = s.take(ctx, id, nil)
		out, ttl, err := tryUpdate(input, res)
		m := s.take(ctx, id, out)
		if err != nil || out == nil {
			return out, ttl, err
		}
		var after int64
		if m != nil {
			after = m.after
		} else if after, err = s.sizer.size(out); err != nil {
			return nil, nil, apierrors.NewInternalError(err)
		}
		if res.ResourceVersion == 0 {
			// Not found and ignoreNotFound: this update creates.
			last = s.one(after)
		} else {
			last = Usage{Bytes: after - before}
		}
		more := Usage{Objects: max(last.Objects-held.Objects, 0), Bytes: max(last.Bytes-held.Bytes, 0), Workspaces: max(last.Workspaces-held.Workspaces, 0)}
		if more.Grows() {
			if err := s.a.reserve(ctx, s.gr, path.Base(key), id, more, enforce); err != nil {
				return nil, nil, err
			}
			held = held.Add(more)
		}
		return out, ttl, nil
	}
	err := s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, counted, cachedExistingObject)
	if err != nil {
		s.a.release(ctx, id, held)
		return err
	}
	// Settle: give back what was held beyond the final change, and record
	// a shrink.
	s.a.release(ctx, id, held.Add(last.Neg()))
	return nil
}
