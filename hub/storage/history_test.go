package storage_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wharfhub/wharf/hub/apis/scheme"
	"github.com/wharfhub/wharf/hub/registry"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// A watch cache whose history holds more deleted bytes than its bound for
// Grace relists: the history is released, so a watch from before the
// deletes is answered "too old" and the cache's watchers are closed.
// Under the bound, or within MinInterval of the last relist, nothing
// happens. Real etcd, the
// real watch cache; the hub's clock is fake.
func TestWatchCacheHistoryBound(t *testing.T) {
	const (
		objects = 20
		size    = 100 << 10
		grace   = 10 * time.Second
		minGap  = time.Minute
	)
	for _, tc := range []struct {
		name    string
		bytes   int64
		relists bool
	}{
		{"over the bound", objects * size / 2, true},
		{"under the bound", objects * size * 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			store := newBoundedStore(t, clk, wstorage.HistoryLimit{Bytes: tc.bytes, Grace: grace, MinInterval: minGap})
			ctx := ctxFor(clusterA)
			first, err := store.Create(ctx, configMap("first", "v", ""), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rv := first.(*corev1.ConfigMap).ResourceVersion
			w, err := store.Watch(ctx, &metainternalversion.ListOptions{ResourceVersion: rv})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			// Read while the burst is written: the cache closes a watcher
			// that does not keep up.
			seen := drainAsync(t, w, 2*objects)
			burst(t, store, "a", objects, size)
			// Every event has reached the watcher, so the cache has them.
			if seen := <-seen; seen != 2*objects {
				t.Fatalf("watcher saw %d events, want %d", seen, 2*objects)
			}
			if !tc.relists {
				clk.Step(grace)
				clk.Step(minGap)
				// A watch from before the burst is still served from the
				// history: it replays the burst.
				if err := replay(store, rv, 2*objects); err != nil {
					t.Fatal(err)
				}
				return
			}
			eventually(t, 30*time.Second, func() error {
				clk.Step(grace)
				return closed(w)
			})
			eventually(t, 30*time.Second, func() error {
				err := replay(store, rv, 0)
				if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
					return fmt.Errorf("watch from before the deletes: %v, want too old", err)
				}
				return nil
			})

			// A second burst within MinInterval waits for it.
			w2 := readyWatch(t, store)
			defer w2.Stop()
			seen2 := drainAsync(t, w2, 2*objects)
			burst(t, store, "b", objects, size)
			if seen := <-seen2; seen != 2*objects {
				t.Fatalf("second watcher saw %d events, want %d", seen, 2*objects)
			}
			clk.Step(grace)
			select {
			case _, ok := <-w2.ResultChan():
				if !ok {
					t.Fatalf("relisted again within %s", minGap)
				}
			case <-time.After(time.Second): // nothing happened (not a timing assertion: absence)
			}
			eventually(t, 30*time.Second, func() error {
				clk.Step(grace)
				return closed(w2)
			})
		})
	}
}

func newBoundedStore(t *testing.T, clk *clocktesting.FakeClock, limit wstorage.HistoryLimit) *registry.Store {
	t.Helper()
	etcd := testserver.RunEtcd(t, nil)
	s := scheme.New()
	cfg := storagebackend.NewDefaultConfig("/registry", scheme.NewCodecs(s).LegacyCodec(corev1.SchemeGroupVersion))
	cfg.Transport.ServerList = etcd.Endpoints()
	gr := schema.GroupResource{Resource: "configmaps"}
	var kind *registry.Kind
	for _, k := range registry.BuiltinKinds()[corev1.SchemeGroupVersion] {
		if k.Resource == gr {
			kind = k
		}
	}
	getter := wstorage.RESTOptionsGetter{
		Delegate:    generic.RESTOptions{StorageConfig: cfg.ForResource(gr), Decorator: genericregistry.StorageWithCacher()},
		RetryWrites: true, Clock: clk,
		WatchCache: wstorage.WatchCache{Enabled: true, History: limit},
	}
	store, err := registry.NewStore(s, getter, kind)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.DestroyFunc)
	readyWatch(t, store).Stop()
	return store
}

// readyWatch opens a watch from now once the cache serves one.
func readyWatch(t *testing.T, store *registry.Store) watch.Interface {
	t.Helper()
	var w watch.Interface
	eventually(t, 30*time.Second, func() error {
		list, err := store.List(ctxFor(clusterA), nil)
		if err != nil {
			return err
		}
		w, err = store.Watch(ctxFor(clusterA), &metainternalversion.ListOptions{ResourceVersion: list.(*corev1.ConfigMapList).ResourceVersion})
		return err
	})
	return w
}

func burst(t *testing.T, store *registry.Store, prefix string, n, size int) {
	t.Helper()
	ctx := ctxFor(clusterA)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if _, err := store.Create(ctx, configMap(name, strings.Repeat("x", size), ""), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		if _, _, err := store.Delete(ctx, fmt.Sprintf("%s-%d", prefix, i), rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// closed reports whether w's channel is closed, reading what it has.
func closed(w watch.Interface) error {
	for {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
		case <-time.After(2 * time.Second):
			return fmt.Errorf("the watcher is still open")
		}
	}
}

func drainAsync(t *testing.T, w watch.Interface, n int) <-chan int {
	out := make(chan int, 1)
	go func() { out <- drain(t, w, n) }()
	return out
}

// drain reads n events (fewer if the watch ends or stalls).
func drain(t *testing.T, w watch.Interface, n int) int {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Error {
				return i
			}
			// Watchers get the whole deleted object, as from kube.
			obj := ev.Object
			if c, ok := obj.(runtime.CacheableObject); ok {
				obj = c.GetObject()
			}
			if cm, ok := obj.(*corev1.ConfigMap); ev.Type == watch.Deleted && (!ok || cm.Data["v"] == "") {
				t.Errorf("DELETED event without the object's data: %#v", ev.Object)
			}
		case <-time.After(30 * time.Second):
			return i
		}
	}
	return n
}

// replay watches from rv and reads want events; a refused watch is its
// error.
func replay(store *registry.Store, rv string, want int) error {
	ctx, cancel := context.WithTimeout(ctxFor(clusterA), 30*time.Second)
	defer cancel()
	w, err := store.Watch(ctx, &metainternalversion.ListOptions{ResourceVersion: rv})
	if err != nil {
		return err
	}
	defer w.Stop()
	for i := 0; i < want || want == 0; i++ {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("watch from %s ended after %d events", rv, i)
			}
			if ev.Type == watch.Error {
				return apierrors.FromObject(ev.Object)
			}
			if want == 0 {
				return fmt.Errorf("watch from %s replayed %s", rv, ev.Type)
			}
		case <-ctx.Done():
			return fmt.Errorf("watch from %s: %d of %d events", rv, i, want)
		}
	}
	return nil
}

// eventually retries cond until it holds or timeout passes (a deadline
// for a real-time wait, not an assertion on time).
func eventually(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %v", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
