package storage

import (
	"context"
	"fmt"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/selectors"
)

// The watch cache keys every object by keyFunc and the cluster annotation
// (decorator.go). One stored value for which that key cannot be computed,
// or is not the etcd key it was read from, used to make the cache's list
// fail, and the cache retried that list forever: the resource answered
// "too many requests" in every workspace. Such values come from outside the
// hub's write path (an external etcd written by someone else, data of an
// older hub, a manual etcdctl put), so nothing a request does can prevent
// them; reading must survive them.
//
// The only layer that sees both the etcd key and the stored bytes of every
// value read (lists, gets, the watch cache's list and its watch events) is
// the resource's value transformer, so keyGuard wraps it. A value that
// passes is returned unchanged. Any other value is replaced by a quarantine
// object: an empty object of the resource's type that carries its true etcd
// key in QuarantineAnnotation, so the watch cache keys it exactly where etcd
// has it (a later update or delete of the key replaces it in the cache),
// and clusterStorage never serves it.

const (
	// QuarantineAnnotation holds the etcd key (below the storage prefix) of
	// a stored value that keyGuard refused. Only keyGuard sets it; the
	// decorator strips it from everything written.
	QuarantineAnnotation = "wharf.dev/quarantined-key"
	// quarantineReasonAnnotation says why, for the hub's own log.
	quarantineReasonAnnotation = "wharf.dev/quarantine-reason"
)

// Reasons a stored value is skipped; the reason label of
// wharf_storage_skipped_objects_total.
const (
	reasonUntransformable = "untransformable"
	reasonUndecodable     = "undecodable"
	reasonNoCluster       = "no-cluster-annotation"
	reasonKeyMismatch     = "key-mismatch"
	reasonForgedMarker    = "forged-quarantine-marker"
)

// keyGuard is a value.Transformer that checks every value read against the
// key it was read from.
type keyGuard struct {
	inner          value.Transformer
	codec          runtime.Codec
	newFunc        func() runtime.Object
	keyFunc        func(runtime.Object) (string, error) // the registry's, without the cluster
	pathPrefix     string                               // the etcd key prefix, e.g. /registry
	resourcePrefix string                               // /<group>/<resource>
	scope          Scope
	resource       schema.GroupResource
	// handoff passes each checked object on to the store's decode of the
	// same bytes (handoff.go); Codec returns the codec that takes them.
	handoff handoff
	// sizes, when set, learns the size of every value written and read
	// (sizes.go).
	sizes ObjectSizes
}

var _ value.Transformer = &keyGuard{}

func newKeyGuard(inner value.Transformer, codec runtime.Codec, pathPrefix string, gr schema.GroupResource, resourcePrefix string,
	scope Scope, newFunc func() runtime.Object, keyFunc func(runtime.Object) (string, error)) *keyGuard {
	if inner == nil {
		// What the etcd3 storage factory uses when none is configured.
		inner = identity.NewEncryptCheckTransformer()
	}
	p := path.Join("/", pathPrefix)
	if p == "/" {
		p = ""
	}
	return &keyGuard{inner: inner, codec: codec, newFunc: newFunc, keyFunc: keyFunc, pathPrefix: p,
		resourcePrefix: resourcePrefix, scope: scope, resource: gr}
}

func (g *keyGuard) TransformToStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, error) {
	out, err := g.inner.TransformToStorage(ctx, data, dataCtx)
	if err == nil && g.sizes != nil {
		g.sizes.Stored(g.relativeKey(dataCtx), len(data), true)
	}
	return out, err
}

func (g *keyGuard) TransformFromStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, bool, error) {
	// A request that has ended (its caller went away, it timed out)
	// decodes nothing more: a list read from etcd went on decoding every
	// value of its scope long after its answer was given up (eleventh
	// outside review, E10: 11-14 GiB of heap still held after the
	// clients left). Its list fails, and nobody reads the answer. The
	// watch cache's own reads run on contexts of its own.
	if err := ctx.Err(); err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", g.relativeKey(dataCtx), err)
	}
	key := g.relativeKey(dataCtx)
	plain, stale, err := g.inner.TransformFromStorage(ctx, data, dataCtx)
	if err != nil {
		return g.quarantine(ctx, key, reasonUntransformable, err)
	}
	// What a list read from etcd weighs it (hub/fairness).
	selectors.AddRead(ctx, len(plain))
	if g.newFunc == nil {
		return plain, stale, nil
	}
	obj, gvk, err := g.codec.Decode(plain, nil, g.newFunc())
	if err != nil {
		return g.quarantine(ctx, key, reasonUndecodable, err)
	}
	if reason, err := g.check(obj, key); reason != "" {
		return g.quarantine(ctx, key, reason, err)
	}
	g.handoff.put(plain, obj, gvk)
	if g.sizes != nil {
		g.sizes.Stored(key, len(plain), false)
	}
	return plain, stale, nil
}

// Codec wraps the resource's storage codec so that its Decode of a value
// this guard just returned yields the object the guard checked instead of
// decoding it again. The store must be built with it.
func (g *keyGuard) Codec() runtime.Codec {
	return handoffCodec{Codec: g.codec, h: &g.handoff}
}

// relativeKey is the etcd key of the value without the storage prefix, the
// form keys have in the watch cache.
func (g *keyGuard) relativeKey(dataCtx value.Context) string {
	if dataCtx == nil {
		return ""
	}
	full := string(dataCtx.AuthenticatedData())
	if rel, ok := strings.CutPrefix(full, g.pathPrefix); ok {
		return rel
	}
	return full
}

// check says why obj may not be served from key, or "".
func (g *keyGuard) check(obj runtime.Object, key string) (string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return reasonUndecodable, err
	}
	a := m.GetAnnotations()
	if _, ok := a[QuarantineAnnotation]; ok {
		return reasonForgedMarker, fmt.Errorf("stored object carries %s", QuarantineAnnotation)
	}
	id := cluster.ID(a[ClusterAnnotation])
	if id == "" {
		return reasonNoCluster, fmt.Errorf("no %s annotation", ClusterAnnotation)
	}
	if g.scope == GlobalScope && id != cluster.Global {
		return reasonKeyMismatch, fmt.Errorf("hub-wide object annotated with cluster %q", id)
	}
	if seg, ok := ClusterFromKey(g.resourcePrefix, key); !ok || seg != id {
		return reasonKeyMismatch, fmt.Errorf("annotation says cluster %q, key says %q", id, seg)
	}
	if g.keyFunc == nil {
		return "", nil
	}
	k, err := g.keyFunc(obj)
	if err != nil {
		return reasonKeyMismatch, err
	}
	want, err := ClusterKey(g.resourcePrefix, k, id)
	if err != nil {
		return reasonKeyMismatch, err
	}
	if want != key {
		return reasonKeyMismatch, fmt.Errorf("object belongs at %q", want)
	}
	return "", nil
}

// quarantine reports a refused value and returns the encoding of its
// stand-in. The log names the key and the reason, never the value: it may
// be a Secret. If even the stand-in cannot be built, the original error
// stands and the read fails as it would upstream.
func (g *keyGuard) quarantine(ctx context.Context, key, reason string, cause error) ([]byte, bool, error) {
	skippedObjects.WithLabelValues(g.resource.String(), reason).Inc()
	klog.FromContext(ctx).Error(cause, "Skipping a stored object that cannot be served from its key; remove or rewrite the key in etcd",
		"resource", g.resource.String(), "key", key, "reason", reason)
	if g.newFunc == nil || key == "" {
		return nil, false, fmt.Errorf("stored object at %q refused (%s): %w", key, reason, cause)
	}
	obj := g.newFunc()
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, false, fmt.Errorf("quarantine of %q: %w", key, err)
	}
	m.SetName(path.Base(key))
	m.SetAnnotations(map[string]string{QuarantineAnnotation: key, quarantineReasonAnnotation: reason})
	out, err := runtime.Encode(g.codec, obj)
	if err != nil {
		return nil, false, fmt.Errorf("stored object at %q refused (%s): %w; quarantine: %w", key, reason, cause, err)
	}
	return out, false, nil
}

// quarantinedKey returns the etcd key of a quarantine stand-in.
func quarantinedKey(obj runtime.Object) (string, bool) {
	if co, ok := obj.(runtime.CacheableObject); ok {
		obj = co.GetObject()
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", false
	}
	k, ok := m.GetAnnotations()[QuarantineAnnotation]
	return k, ok
}
