package resourceproxy

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	rp "github.com/wharfhub/wharf/providers/resourceproxy"
)

// TestWatchEndsWhenTargetGoes: a watch through the proxy is cut when both
// kube-apiserver replicas of the target crash (SIGKILL, so the target
// sends no graceful end of its own). The client must see the stream end
// (a hang fails the test) without a decode error, and a client-go
// reflector watching through the proxy must list again once the target is
// back and then follow new objects.
func TestWatchEndsWhenTargetGoes(t *testing.T) {
	e := startEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.ns.add(teamA, "apps")
	a := e.dyn(teamA).Namespace("apps")
	if _, err := a.Create(ctx, db("w1", 1), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}

	// The reflector's initial listings: a list, or a watch-list (client-go's
	// WatchListClient) that asks for the initial events.
	var listings, watchLists atomic.Int32
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			l, err := a.List(ctx, o)
			if err == nil {
				listings.Add(1)
			}
			return l, err
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			w, err := a.Watch(ctx, o)
			if err == nil && o.SendInitialEvents != nil && *o.SendInitialEvents {
				listings.Add(1)
				watchLists.Add(1)
			}
			return w, err
		},
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := cache.NewReflector(lw, &unstructured.Unstructured{}, store, 0)
	go r.Run(ctx.Done())
	has := func(name string) func() error {
		return func() error {
			if _, ok, _ := store.GetByKey("apps/" + name); !ok {
				return fmt.Errorf("reflector store has no %s (keys %v)", name, store.ListKeys())
			}
			return nil
		}
	}
	eventually(t, "reflector synced", has("w1"))
	if n := listings.Load(); n != 1 {
		t.Fatalf("listings before the outage = %d, want 1", n)
	}

	l, err := a.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := a.Watch(ctx, metav1.ListOptions{ResourceVersion: l.GetResourceVersion()})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	eventually(t, "watching (an open watch counted)", func() error {
		if n := e.metric("wharf_resource_proxy_active_watches", map[string]string{"target": targetName}); n < 2 {
			return fmt.Errorf("open watches = %v, want the reflector's and ours", n)
		}
		return nil
	})

	if err := e.kube.KillReplica(1); err != nil {
		t.Fatal(err)
	}
	if err := e.kube.KillReplica(0); err != nil {
		t.Fatal(err)
	}
	ended := time.After(90 * time.Second)
	for open := true; open; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				open = false
				break
			}
			if ev.Type == watch.Error {
				t.Errorf("watch ended with an error event, not cleanly: %v", ev.Object)
			}
		case <-ended:
			t.Fatal("watch through the proxy still open 90s after the target went away")
		}
	}
	eventually(t, "no watch left open", func() error {
		if n := e.metric("wharf_resource_proxy_active_watches", map[string]string{"target": targetName}); n != 0 {
			return fmt.Errorf("open watches = %v", n)
		}
		return nil
	})

	// Back: the failed dials quarantined the peers on the fake clock, so
	// it is stepped past the quarantine until requests pass again.
	if err := e.kube.StartReplica(0); err != nil {
		t.Fatal(err)
	}
	if err := e.kube.StartReplica(1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for listings.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("reflector did not list again after the target came back (listings %d)", listings.Load())
		}
		e.clock.Step(rp.QuarantineDuration)
		time.Sleep(500 * time.Millisecond)
	}
	if _, err := a.Create(ctx, db("w2", 2), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create after recovery: %v", err)
	}
	eventually(t, "reflector follows new objects after the re-list", has("w2"))
	t.Logf("reflector listings: %d (of which %d watch-lists)", listings.Load(), watchLists.Load())
}
