package storage

import (
	"reflect"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// keyGuard must decode every value it reads to check it against its key,
// and the etcd3 store then decodes the very same bytes again with the same
// codec (gets, lists, GuaranteedUpdate's reads, every watch event). For
// small objects that second decode was about 4% of the hub's CPU at steady
// load. The guard therefore hands the object it checked to the store's
// decode of those bytes: the codec below answers a Decode of exactly the
// slice the guard returned with the guard's object.
//
// The check is unchanged: it still runs on every value read, before the
// value leaves the transformer. The hand-off is only a cache of its result.
// A miss (an evicted entry, another type, a caller that decodes the bytes
// twice) decodes as before, so no value is ever served unchecked nor a
// checked value refused. The object served is now the object checked.
//
// An entry is matched by the address and length of the bytes, and holds
// those bytes, so the address cannot be reused for other bytes while the
// entry lives. Entries are taken by the store's decode, which follows the
// transform in the same call; the ones nobody takes (a list cut short by
// its context) are evicted oldest first, within a small bound per resource.
const (
	handoffEntries  = 64
	handoffMaxValue = 256 << 10 // larger values are decoded twice, as before
	handoffMaxBytes = 2 << 20   // of raw values held at once, per resource
)

// handed is one checked object waiting for the store's decode.
type handed struct {
	data []byte
	obj  runtime.Object
	gvk  *schema.GroupVersionKind
}

// handoff holds the objects keyGuard checked until the store decodes their
// bytes. The zero value is ready.
type handoff struct {
	mu      sync.Mutex
	entries map[*byte]handed
	order   [handoffEntries]*byte // FIFO of keys put, oldest at head
	head, n int
	bytes   int
	// nilKinds is the kind a decode into no object leaves on each type;
	// nil once two such decodes disagreed.
	nilKinds map[reflect.Type]*schema.GroupVersionKind
}

func (h *handoff) nilKind(t reflect.Type) (schema.GroupVersionKind, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if gvk := h.nilKinds[t]; gvk != nil {
		return *gvk, true
	}
	return schema.GroupVersionKind{}, false
}

// learnNilKind records the kind a full decode into no object left on an
// object of type t. Should two decodes ever disagree, the type is never
// handed to such decodes again.
func (h *handoff) learnNilKind(t reflect.Type, gvk schema.GroupVersionKind) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.nilKinds == nil {
		h.nilKinds = map[reflect.Type]*schema.GroupVersionKind{}
	}
	old, seen := h.nilKinds[t]
	switch {
	case !seen:
		h.nilKinds[t] = &gvk
	case old != nil && *old != gvk:
		h.nilKinds[t] = nil
	}
}

// put offers obj, decoded from data, to the next decode of data.
func (h *handoff) put(data []byte, obj runtime.Object, gvk *schema.GroupVersionKind) {
	if len(data) == 0 || len(data) > handoffMaxValue {
		return
	}
	// A decode into no object (the watch) yields the type the bytes name,
	// which for typed resources is the guard's type; an Unstructured one
	// may take another path in the codec, so it is decoded again.
	if _, ok := obj.(runtime.Unstructured); ok {
		return
	}
	k := unsafe.SliceData(data)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.entries == nil {
		h.entries = make(map[*byte]handed, handoffEntries)
	}
	if old, ok := h.entries[k]; ok {
		h.bytes -= len(old.data)
	}
	for h.n == handoffEntries || (h.n > 0 && h.bytes+len(data) > handoffMaxBytes) {
		h.evictOldest()
	}
	h.entries[k] = handed{data: data, obj: obj, gvk: gvk}
	h.bytes += len(data)
	h.order[(h.head+h.n)%handoffEntries] = k
	h.n++
}

// evictOldest drops the oldest key put; it may have been taken already.
func (h *handoff) evictOldest() {
	k := h.order[h.head]
	h.order[h.head] = nil
	h.head = (h.head + 1) % handoffEntries
	h.n--
	if e, ok := h.entries[k]; ok {
		h.bytes -= len(e.data)
		delete(h.entries, k)
	}
}

// take returns and forgets the object checked for exactly these bytes.
func (h *handoff) take(data []byte) (handed, bool) {
	if len(data) == 0 {
		return handed{}, false
	}
	k := unsafe.SliceData(data)
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.entries[k]
	if !ok || len(e.data) != len(data) {
		return handed{}, false
	}
	delete(h.entries, k)
	h.bytes -= len(e.data)
	return e, true
}

// handoffCodec is the resource's storage codec, whose Decode first looks
// for the object keyGuard already decoded from the same bytes.
type handoffCodec struct {
	runtime.Codec
	h *handoff
}

func (c handoffCodec) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if defaults != nil {
		return c.Codec.Decode(data, defaults, into)
	}
	e, hit := c.h.take(data)
	switch {
	case hit && into != nil && reflect.TypeOf(into) == reflect.TypeOf(e.obj):
		// The guard decoded into a new object of the resource's type;
		// the store decodes into a new one of the same type too (its
		// Get's out, GuaranteedUpdate's state, a list's new item), so a
		// copy of the fields is the same object.
		reflect.ValueOf(into).Elem().Set(reflect.ValueOf(e.obj).Elem())
		return into, e.gvk, nil
	case hit && into == nil:
		// A decode into no object (the watch) differs from the guard's
		// only in the kind it leaves on the object: it ends by converting
		// to the codec's decode version, which sets the same kind on
		// every object of a type. The first such decode is done in full
		// and tells which.
		if gvk, ok := c.h.nilKind(reflect.TypeOf(e.obj)); ok {
			e.obj.GetObjectKind().SetGroupVersionKind(gvk)
			return e.obj, e.gvk, nil
		}
	}
	obj, gvk, err := c.Codec.Decode(data, defaults, into)
	if err == nil && into == nil && obj != nil {
		c.h.learnNilKind(reflect.TypeOf(obj), obj.GetObjectKind().GroupVersionKind())
	}
	return obj, gvk, err
}
