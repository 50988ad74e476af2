package storage

import (
	"context"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/metadata"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// A consistent read served by the watch cache (a list or get without a
// resourceVersion) first reads etcd's current revision, then waits until
// the cache has read etcd that far. After a write to another resource the
// cache learns that only from a progress notification, which upstream
// asks for at most every 100 ms while reads wait. On a hub every tenant's
// writes move the one revision: another tenant's workspace churn (its
// namespaces, RBAC, usage records) made each of a victim's ConfigMap
// lists wait 41 ms on average, 46% of her time (review 5, #24). The
// cache's storage asks at once instead, when the revision a read waits
// for is past what the cache has read, at most once per freshAskEvery per
// resource (upstream's 100 ms ticker stays as the fallback).
const freshAskEvery = 2 * time.Millisecond

// freshness asks etcd for a progress notification on the cache's watch
// stream when a consistent read would wait.
type freshness struct {
	lastAsk atomic.Int64 // unix nanoseconds
}

// GetCurrentResourceVersion is the revision a consistent read of the cache
// waits for; see freshness.
func (b *boundedHistory) GetCurrentResourceVersion(ctx context.Context) (uint64, error) {
	rv, err := b.Interface.GetCurrentResourceVersion(ctx)
	if err != nil || int64(rv) <= b.seen.Load() {
		return rv, err
	}
	now := b.clk.Now().UnixNano()
	last := b.fresh.lastAsk.Load()
	if now-last < int64(freshAskEvery) || !b.fresh.lastAsk.CompareAndSwap(last, now) {
		return rv, nil
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.Interface.RequestWatchProgress(cacheWatchContext(ctx))
	}()
	return rv, nil
}

// cacheWatchContext carries the metadata upstream's cache puts on its etcd
// watch (cacher.go, SeparateCacheWatchRPC), so that the request goes on
// the same watch stream: a progress request answers only the watches of
// its own stream.
func cacheWatchContext(ctx context.Context) context.Context {
	if !utilfeature.DefaultFeatureGate.Enabled(features.SeparateCacheWatchRPC) {
		return ctx
	}
	return metadata.NewOutgoingContext(ctx, metadata.New(map[string]string{"source": "cache"}))
}
