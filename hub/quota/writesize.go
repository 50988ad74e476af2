package quota

import (
	"context"
	"net/http"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/wharfhub/wharf/hub/cluster"
)

// One size per write request.
//
// A write is measured once, with the codec of the store it goes to, as
// that store will write it, by whichever check needs it first during
// admission: hub/storecap's estimate of what the store grows by, when
// the store is near its mark (WriteSize), or else the accountant's own
// admission step (admission_write.go). The measure is kept in the
// request's context; the counting storage (storage.go) charges it
// instead of encoding the object again. A storage call that admission did
// not measure (the hub's own writes, subresources whose object is not the
// stored one) measures itself.
//
// A measure is used only by the storage call it describes: the same
// store, cluster, namespace and name, and the next storage call of the
// request (each attempt of an update runs admission again, inside the
// attempt). Between admission and the storage call the upstream store
// changes nothing the store encodes; the resourceVersion it clears and
// the cluster annotation the hub stamps are measured as they will be.

// measured is one admitted write's size.
type measured struct {
	// attrs is the admission call that measured it.
	attrs           admission.Attributes
	by              *countedStorage
	cluster         cluster.ID
	namespace, name string
	// after is the object's stored size.
	after int64
	// update: the object replaces a stored one (the storage call
	// measures that one itself).
	update bool
}

// writeSizes holds the last measure of one request.
type writeSizes struct {
	a    *Accountant
	last atomic.Pointer[measured]
}

type writeSizesKey struct{}

func sizesFrom(ctx context.Context) *writeSizes {
	w, _ := ctx.Value(writeSizesKey{}).(*writeSizes)
	return w
}

// isWrite reports the methods whose requests store objects.
func isWrite(method string) bool {
	return method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch
}

// WriteSize is the stored size of the object that the admission call
// attrs, of the request in ctx, is about to write, measured now or
// earlier in this call; false for writes the accountant does not count.
func WriteSize(ctx context.Context, attrs admission.Attributes) (int64, bool) {
	w := sizesFrom(ctx)
	if w == nil {
		return 0, false
	}
	m := w.a.measureFor(ctx, attrs)
	if m == nil {
		return 0, false
	}
	return m.after, true
}

// measureFor returns attrs' measure, measuring it if this admission call
// has not yet, and keeps it for the storage call.
func (a *Accountant) measureFor(ctx context.Context, attrs admission.Attributes) *measured {
	w := sizesFrom(ctx)
	if w != nil {
		if m := w.last.Load(); m != nil && m.attrs == attrs {
			return m
		}
	}
	m := a.measure(ctx, attrs)
	if m != nil && w != nil {
		w.last.Store(m)
	}
	return m
}

// measure sizes the write of attrs as its store will write it; nil for
// writes not counted, and for objects that cannot be measured (their
// storage call measures, and fails, itself).
func (a *Accountant) measure(ctx context.Context, attrs admission.Attributes) *measured {
	if op := attrs.GetOperation(); op != admission.Create && op != admission.Update {
		return nil
	}
	// Other subresources (scale, token, eviction, ...) carry another
	// object than the one stored.
	if sub := attrs.GetSubresource(); sub != "" && sub != "status" {
		return nil
	}
	obj := attrs.GetObject()
	s := a.storeOf(attrs.GetResource().GroupResource())
	if obj == nil || s == nil {
		return nil
	}
	id, ok := cluster.From(ctx)
	if !ok {
		return nil
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	after, err := s.sizer.sizeIn(obj, id)
	if err != nil {
		return nil
	}
	return &measured{attrs: attrs, by: s, cluster: id, namespace: acc.GetNamespace(), name: acc.GetName(), after: after,
		update: attrs.GetOperation() == admission.Update && attrs.GetOldObject() != nil}
}

// take returns the measure of the storage call of s on obj in cluster id,
// if admission measured it, and in any case clears the request's measure:
// it describes one storage call at most.
func (s *countedStorage) take(ctx context.Context, id cluster.ID, obj runtime.Object) *measured {
	w := sizesFrom(ctx)
	if w == nil {
		return nil
	}
	m := w.last.Swap(nil)
	if m == nil || obj == nil || m.by != s || m.cluster != id {
		return nil
	}
	acc, err := meta.Accessor(obj)
	if err != nil || acc.GetNamespace() != m.namespace || acc.GetName() != m.name {
		return nil
	}
	return m
}
