package fairness

import (
	"context"

	"k8s.io/apiserver/pkg/endpoints/request"
)

// StoredSizes says how large the stored object a request names is
// (hub/objsize learns it from the hub's storage).
type StoredSizes interface {
	// StoredSize is the stored size of the object info names, when it is
	// known and may weigh tenant's request: only the tenant owning the
	// object's workspace is weighed by it, since the width is chosen
	// before authorization.
	StoredSize(ctx context.Context, tenant string, info *request.RequestInfo) (int64, bool)
}

// namesStoredObject reports a request that reads or rewrites the whole
// of one stored object: get, patch and update (server-side apply
// included) of a named object or of its subresources (status, scale:
// the object is rewritten whole).
func namesStoredObject(info *request.RequestInfo) bool {
	if !info.IsResourceRequest || info.Name == "" {
		return false
	}
	switch info.Verb {
	case "get", "patch", "update":
		return true
	}
	return false
}

// storedSeats is the width of a request that reads or rewrites a named
// stored object, by that object's size; 0 when not such a request or
// the size is not known. A tiny merge patch of a 960 KB object costs
// the hub as much as posting it (decode, patch, validation, quota,
// encoding for etcd and the watch cache), so a write is weighed at
// WriteBytesPerSeat, a read at ObjectReadBytesPerSeat. A JSON patch's
// operations cannot multiply it beyond that: upstream bounds the bytes
// its copies may add (--json-patch-max-copy-bytes, 3 MB by default).
func (c *Controller) storedSeats(ctx context.Context, tenant string, info *request.RequestInfo, k Kind) uint64 {
	if c.stored == nil || !namesStoredObject(info) {
		return 0
	}
	size, ok := c.stored.StoredSize(ctx, tenant, info)
	if !ok || size <= 0 {
		return 0
	}
	per := int64(ObjectReadBytesPerSeat)
	if k == Mutating {
		per = WriteBytesPerSeat
	}
	seats := uint64((size + per - 1) / per)
	return min(max(seats, 1), c.maxSeats(k))
}
