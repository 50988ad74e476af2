package storage

import (
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/runtime"
	genericfeatures "k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/etcd3"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	hubetcd "github.com/wharfhub/wharf/hub/etcd"
)

// The upstream factory builds each resource's etcd3 store on a client of
// its own that the hub cannot reach, and etcd's client does not retry a
// write that failed because its member died. The hub builds the store the
// same way but on a client whose writes go through hubetcd.RetryingKV, so
// that losing one etcd member (or its leader) costs clients no error.

// Same timings as the upstream factory: a dead member is noticed quickly.
const (
	rawDialTimeout      = 20 * time.Second
	rawKeepaliveTime    = 30 * time.Second
	rawKeepaliveTimeout = 10 * time.Second
)

// One logger for every client: a client without one builds its own.
var rawClientLogger = zap.NewNop()

// retryingStorage is the decorator of a resource whose etcd3 store
// writes through a retrying client: the raw store alone, or, when cached
// (the hub's WatchCache decides it, as upstream's options do), the watch
// cache in front of it, built as upstream's StorageWithCacher builds it.
//
// The cache reads from the store through boundedHistory (history.go), so
// that a burst of large deletes is held once, not twice, in the cache's
// event history (slim.go), and, with history set, not for as long as the
// resource stays quiet.
func retryingStorage(cached bool, history HistoryLimit, clk clock.Clock) generic.StorageDecorator {
	if !cached {
		return func(config *storagebackend.ConfigForResource, resourcePrefix string, _ func(obj runtime.Object) (string, error),
			newFunc, newListFunc func() runtime.Object, _ storage.AttrFunc, _ storage.IndexerFuncs, _ *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
			return newRetryingStore(*config, newFunc, newListFunc, resourcePrefix, clk)
		}
	}
	return func(config *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(obj runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, getAttrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
		s, destroy, err := newRetryingStore(*config, newFunc, newListFunc, resourcePrefix, clk)
		if err != nil {
			return nil, nil, err
		}
		source := newBoundedHistory(s, config.GroupResource, config.Codec, config.EventsHistoryWindow, history, clk,
			slimmer{keyFunc: keyFunc, getAttrs: getAttrs, triggers: triggers})
		cacher, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
			Storage: source, Versioner: storage.APIObjectVersioner{}, GroupResource: config.GroupResource,
			EventsHistoryWindow: config.EventsHistoryWindow, ResourcePrefix: resourcePrefix, KeyFunc: keyFunc,
			NewFunc: newFunc, NewListFunc: newListFunc, GetAttrsFunc: getAttrs, IndexerFuncs: triggers,
			Indexers: indexers, Codec: config.Codec,
		})
		if err != nil {
			destroy()
			return nil, nil, fmt.Errorf("watch cache for %s: %w", resourcePrefix, err)
		}
		delegator := cacherstorage.NewCacheDelegator(cacher, s)
		var once sync.Once
		return delegator, func() {
			once.Do(func() {
				history.Shares.unregister(config.GroupResource, source)
				history.Progress.unregister(source)
				delegator.Stop()
				cacher.Stop()
				destroy()
			})
		}, nil
	}
}

// newRetryingStore is the upstream etcd3 store on a retrying client.
func newRetryingStore(c storagebackend.ConfigForResource, newFunc, newListFunc func() runtime.Object, resourcePrefix string, clk clock.Clock) (storage.Interface, factory.DestroyFunc, error) {
	if c.Type != storagebackend.StorageTypeUnset && c.Type != storagebackend.StorageTypeETCD3 {
		return nil, nil, fmt.Errorf("unsupported storage type %q", c.Type)
	}
	compactor, stopCompactor, err := sharedCompactor(c.Transport, c.CompactionInterval)
	if err != nil {
		return nil, nil, err
	}
	client, err := newRawClient(c.Transport)
	if err != nil {
		stopCompactor()
		return nil, nil, err
	}
	client.KV = etcd3.NewETCDLatencyTracker(client.KV)
	hubetcd.WrapClient(client, clk)
	transformer := c.Transformer
	if transformer == nil {
		transformer = identity.NewEncryptCheckTransformer()
	}
	versioner := storage.APIObjectVersioner{}
	decoder := etcd3.NewDefaultDecoder(c.Codec, versioner)
	if utilfeature.DefaultFeatureGate.Enabled(genericfeatures.AllowUnsafeMalformedObjectDeletion) {
		transformer = etcd3.WithCorruptObjErrorHandlingTransformer(transformer)
		decoder = etcd3.WithCorruptObjErrorHandlingDecoder(decoder)
	}
	store, err := etcd3.New(client, compactor, c.Codec, newFunc, newListFunc, c.Prefix, resourcePrefix, c.GroupResource,
		transformer, c.LeaseManagerConfig, decoder, versioner)
	if err != nil {
		stopCompactor()
		_ = client.Close()
		return nil, nil, fmt.Errorf("etcd3 store for %s: %w", resourcePrefix, err)
	}
	var once sync.Once
	destroy := func() {
		// Subresources share the store and destroy it again.
		once.Do(func() { stopCompactor(); store.Close(); _ = client.Close() })
	}
	var s storage.Interface = store
	if utilfeature.DefaultFeatureGate.Enabled(genericfeatures.AllowUnsafeMalformedObjectDeletion) {
		s = etcd3.NewStoreWithUnsafeCorruptObjectDeletion(s, c.GroupResource)
	}
	return s, destroy, nil
}

func newRawClient(t storagebackend.TransportConfig) (*kubernetes.Client, error) {
	cfg := clientv3.Config{
		Endpoints: t.ServerList, DialTimeout: rawDialTimeout,
		DialKeepAliveTime: rawKeepaliveTime, DialKeepAliveTimeout: rawKeepaliveTimeout,
		Logger: rawClientLogger,
	}
	if t.CertFile != "" || t.KeyFile != "" || t.TrustedCAFile != "" {
		tlsCfg, err := (transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.TrustedCAFile}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("etcd client TLS: %w", err)
		}
		cfg.TLS = tlsCfg
	}
	c, err := kubernetes.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd: %w", err)
	}
	return c, nil
}

// One compactor per etcd cluster, shared by every store on it, as
// upstream does.
var (
	compactorsMu sync.Mutex
	compactors   = map[string]*sharedCompact{}
)

type sharedCompact struct {
	refs      int
	compactor etcd3.Compactor
	stop      func()
}

func sharedCompactor(t storagebackend.TransportConfig, interval time.Duration) (etcd3.Compactor, func(), error) {
	if interval == 0 {
		return nil, func() {}, nil
	}
	compactorsMu.Lock()
	defer compactorsMu.Unlock()
	key := fmt.Sprintf("%v|%s", t, interval)
	sc, ok := compactors[key]
	if !ok {
		client, err := newRawClient(t)
		if err != nil {
			return nil, nil, err
		}
		c := etcd3.StartCompactorPerEndpoint(client.Client, interval)
		sc = &sharedCompact{compactor: c, stop: func() { c.Stop(); _ = client.Close() }}
		compactors[key] = sc
	}
	sc.refs++
	var once sync.Once
	return sc.compactor, func() {
		once.Do(func() {
			compactorsMu.Lock()
			defer compactorsMu.Unlock()
			if sc.refs--; sc.refs == 0 {
				sc.stop()
				delete(compactors, key)
			}
		})
	}, nil
}
