package storage_test

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/wharfhub/wharf/hub/apis/scheme"
	"github.com/wharfhub/wharf/hub/registry"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

var (
	configMaps = schema.GroupResource{Resource: "configmaps"}
	secrets    = schema.GroupResource{Resource: "secrets"}
	widgets    = schema.GroupResource{Group: "example.com", Resource: "widgets"}
)

// The hub decides the watch cache as upstream's options do. Each case is
// also put to upstream's own getter, which answers with the plain
// (undecorated) storage exactly when it would not cache, so a change of
// upstream's rule fails here.
func TestWatchCacheDecision(t *testing.T) {
	for _, tc := range []struct {
		name    string
		enabled bool
		sizes   []string
		cached  map[schema.GroupResource]bool
		wantErr bool
	}{
		{name: "default", enabled: true,
			cached: map[schema.GroupResource]bool{configMaps: true, secrets: true, widgets: true}},
		{name: "--watch-cache=false", enabled: false,
			cached: map[schema.GroupResource]bool{configMaps: false, secrets: false, widgets: false}},
		{name: "size 0 turns one resource off", enabled: true, sizes: []string{"secrets#0", "widgets.example.com#0"},
			cached: map[schema.GroupResource]bool{configMaps: true, secrets: false, widgets: false}},
		{name: "a positive size keeps the cache", enabled: true, sizes: []string{"configmaps#100"},
			cached: map[schema.GroupResource]bool{configMaps: true, secrets: true}},
		{name: "sizes do not matter when the cache is off", enabled: false, sizes: []string{"configmaps#100"},
			cached: map[schema.GroupResource]bool{configMaps: false}},
		{name: "negative size", enabled: true, sizes: []string{"configmaps#-1"}, wantErr: true},
		{name: "malformed size", enabled: true, sizes: []string{"configmaps"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := genericoptions.NewEtcdOptions(storagebackend.NewDefaultConfig("/registry", nil))
			o.EnableWatchCache, o.WatchCacheSizes = tc.enabled, tc.sizes
			w, err := wstorage.WatchCacheOf(o)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("WatchCacheOf(%v) = %+v, want an error", tc.sizes, w)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			upstream := o.CreateRESTOptionsGetter(&genericoptions.SimpleStorageFactory{StorageConfig: o.StorageConfig}, nil)
			undecorated := reflect.ValueOf(generic.UndecoratedStorage).Pointer()
			for gr, want := range tc.cached {
				if got := w.Cached(gr); got != want {
					t.Errorf("Cached(%s) = %v, want %v", gr, got, want)
				}
				opts, err := upstream.GetRESTOptions(gr, nil)
				if err != nil {
					t.Fatal(err)
				}
				if up := reflect.ValueOf(opts.Decorator).Pointer() != undecorated; up != want {
					t.Errorf("upstream caches %s: %v, the hub's rule says %v", gr, up, want)
				}
			}
		})
	}
}

// With RetryWrites the store is built by the hub's decision, whatever
// decorator the delegate chose: a watch cache in front of the retrying
// store exactly when the decision says so.
func TestRetryingStoresFollowTheDecision(t *testing.T) {
	etcd := testserver.RunEtcd(t, nil)
	s := scheme.New()
	cfg := storagebackend.NewDefaultConfig("/registry", scheme.NewCodecs(s).LegacyCodec(corev1.SchemeGroupVersion))
	cfg.Transport.ServerList = etcd.Endpoints()
	kinds := map[schema.GroupResource]*registry.Kind{}
	for _, k := range registry.BuiltinKinds()[corev1.SchemeGroupVersion] {
		kinds[k.Resource] = k
	}
	for _, tc := range []struct {
		name  string
		wc    wstorage.WatchCache
		gr    schema.GroupResource
		cache bool
	}{
		{"enabled", wstorage.WatchCache{Enabled: true}, configMaps, true},
		{"off for secrets, configmaps", wstorage.WatchCache{Enabled: true, Off: map[schema.GroupResource]bool{secrets: true}}, configMaps, true},
		{"off for secrets, secrets", wstorage.WatchCache{Enabled: true, Off: map[schema.GroupResource]bool{secrets: true}}, secrets, false},
		{"disabled", wstorage.WatchCache{}, configMaps, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The delegate's decorator is the opposite of the decision: it
			// must not be what decides.
			inner := generic.UndecoratedStorage
			if !tc.cache {
				inner = genericregistry.StorageWithCacher()
			}
			getter := wstorage.RESTOptionsGetter{
				Delegate:    generic.RESTOptions{StorageConfig: cfg.ForResource(tc.gr), Decorator: inner},
				RetryWrites: true, WatchCache: tc.wc,
			}
			store, err := registry.NewStore(s, getter, kinds[tc.gr])
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(store.DestroyFunc)
			under := wstorage.Underlying(store.Storage.Storage)
			if under == nil {
				t.Fatalf("store is %T, not the cluster decorator", store.Storage.Storage)
			}
			if _, cached := under.(*cacher.CacheDelegator); cached != tc.cache {
				t.Errorf("store below the cluster decorator is %T; want a watch cache: %v", under, tc.cache)
			}
		})
	}
}
