package quota

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wharfhub/wharf/hub/cluster"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// sizer measures objects as the store writes them, so that what a create
// charges, what updates add or take, and what the delete releases are
// the same measure of the same stored bytes, and add up to nothing once
// the object is gone (and to what the reconciler reads from etcd while it
// lives).
//
// Two causes made usage drift (outside review row 22):
//   - The store (etcd3's PrepareObjectForStorage) clears resourceVersion
//     and selfLink before it encodes; an object read back, the one a
//     delete returns among them, carries its revision again. Sizing that
//     object as it was released ",\"resourceVersion\":\"NNNNN\"" more
//     than its create had charged: the -26 B per deleted object (JSON
//     storage, five-digit revisions).
//   - The registry's delete of an object with finalizers stamps
//     deletionTimestamp and deletionGracePeriodSeconds on the stored
//     object it is handed and returns that same object; the update was
//     sized after the change on both sides and charged nothing, and the
//     delete then released the stamp too (GuaranteedUpdate now sizes the
//     stored object before calling the update function).
type sizer struct{ codec runtime.Codec }

// size is obj's stored size. obj is changed while it is encoded and
// restored before size returns, as upstream's etcd3 store does with the
// objects it encodes (getStateFromObject); every caller owns obj or holds
// a copy of its own.
func (s sizer) size(obj runtime.Object) (int64, error) {
	return s.measure(obj, "")
}

// sizeIn is obj's stored size once written into cluster id: with the
// cluster annotation the hub's storage decorator stamps on every write
// (admission measures objects before that stamp).
func (s sizer) sizeIn(obj runtime.Object, id cluster.ID) (int64, error) {
	return s.measure(obj, id)
}

func (s sizer) measure(obj runtime.Object, id cluster.ID) (int64, error) {
	if obj == nil {
		return 0, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0, fmt.Errorf("sizing %T: %w", obj, err)
	}
	if rv, link := m.GetResourceVersion(), m.GetSelfLink(); rv != "" || link != "" {
		m.SetResourceVersion("")
		m.SetSelfLink("")
		defer func() {
			m.SetResourceVersion(rv)
			m.SetSelfLink(link)
		}()
	}
	if id != "" {
		stamped, changed, err := wstorage.StampedAnnotations(obj, id)
		if err != nil {
			return 0, fmt.Errorf("sizing %T: %w", obj, err)
		}
		if changed {
			was := m.GetAnnotations()
			m.SetAnnotations(stamped)
			defer m.SetAnnotations(was)
		}
	}
	b, err := runtime.Encode(s.codec, obj)
	if err != nil {
		return 0, err
	}
	return int64(len(b)), nil
}
