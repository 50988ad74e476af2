package workspaces

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/storage/etcd3/testserver"

	"github.com/wharfhub/wharf/hub/cluster"
)

func TestIndexAllocateResolveRelease(t *testing.T) {
	etcd := testserver.RunEtcd(t, nil)
	ctx := context.Background()
	x := NewIndex(etcd.Client, "/registry")
	root, err := x.EnsureRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A second replica agrees on root.
	other := NewIndex(etcd.Client, "/registry")
	if r2, err := other.EnsureRoot(ctx); err != nil || r2 != root {
		t.Fatalf("second replica root = %q, %v; want %q", r2, err, root)
	}

	id, err := x.Allocate(ctx, "root:acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Allocate(ctx, "root:acme"); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate allocate = %v, want ErrExists", err)
	}
	child, _ := x.Allocate(ctx, "root:acme:team-a")
	_, _ = x.Allocate(ctx, "root:acmeco") // shares a string prefix, not a path prefix

	tests := []struct {
		raw     string
		want    cluster.ID
		wantErr error
	}{
		{"root", root, nil},
		{string(root), root, nil},
		{"root:acme", id, nil},
		{string(id), id, nil},
		{"root:acme:team-a", child, nil},
		{"root:nope", "", ErrNotFound},
		{"0000000000000000", "", ErrNotFound},
		{"Root", "", ErrNotFound},
		{"root::x", "", ErrNotFound},
	}
	for _, tt := range tests {
		// The other replica never saw these writes in memory: it must fall
		// back to etcd.
		info, err := other.Resolve(ctx, tt.raw)
		if !errors.Is(err, tt.wantErr) || info.ID != tt.want {
			t.Errorf("Resolve(%q) = %+v, %v; want %q, %v", tt.raw, info, err, tt.want, tt.wantErr)
		}
	}

	desc, err := x.Descendants(ctx, "root:acme")
	if err != nil {
		t.Fatal(err)
	}
	if len(desc) != 1 || desc[child] != "root:acme:team-a" {
		t.Errorf("Descendants = %v", desc)
	}

	if err := x.MarkTerminating(ctx, id, "root:acme"); err != nil {
		t.Fatal(err)
	}
	if info, _ := other.Resolve(ctx, "root:acme"); !info.Terminating {
		t.Error("terminating mark not visible to another replica")
	}
	if err := x.Release(ctx, id, "root:acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Resolve(ctx, "root:acme"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after release: %v", err)
	}
}

// TestIndexWatchOrdering checks that a stale watch event cannot resurrect a
// workspace this replica has just released.
func TestIndexWatchOrdering(t *testing.T) {
	etcd := testserver.RunEtcd(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	x := NewIndex(etcd.Client, "/registry")
	done := make(chan struct{})
	go func() { x.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(30 * time.Second); !x.HasSynced(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("index never synced")
		}
	}
	for i := 0; i < 20; i++ {
		id, err := x.Allocate(ctx, "root:churn")
		if err != nil {
			t.Fatal(err)
		}
		if err := x.MarkTerminating(ctx, id, "root:churn"); err != nil {
			t.Fatal(err)
		}
		if err := x.Release(ctx, id, "root:churn"); err != nil {
			t.Fatal(err)
		}
		if info, ok := x.Cached("root:churn"); ok {
			t.Fatalf("iteration %d: released workspace still cached: %+v", i, info)
		}
	}
	// Another replica writes a sentinel; watch events arrive in order, so
	// once this replica has it, it has applied every churn event too.
	if _, err := NewIndex(etcd.Client, "/registry").Allocate(ctx, "root:sentinel"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok := x.Cached("root:sentinel"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sentinel never seen through the watch")
		}
	}
	if _, ok := x.Cached("root:churn"); ok {
		t.Fatal("stale watch event resurrected a released workspace")
	}
}

// TestIndexIgnoresStaleEvents exercises the revision rule directly: an
// event older than what this replica already applied changes nothing.
func TestIndexIgnoresStaleEvents(t *testing.T) {
	const id, path = cluster.ID("aaaaaaaaaaaaaaaa"), cluster.Path("root:a")
	tests := []struct {
		name   string
		apply  func(x *Index)
		cached bool
	}{
		{"put then delete", func(x *Index) { x.remember(id, record{Path: path}, 5); x.forget(id, path, 6) }, false},
		{"delete then stale put", func(x *Index) { x.forget(id, path, 6); x.remember(id, record{Path: path}, 5) }, false},
		{"delete then newer put", func(x *Index) { x.forget(id, path, 6); x.remember(id, record{Path: path}, 7) }, true},
		{"put then stale delete", func(x *Index) { x.remember(id, record{Path: path}, 7); x.forget(id, path, 6) }, true},
		{"terminating then stale ready", func(x *Index) {
			x.remember(id, record{Path: path, Terminating: true}, 8)
			x.remember(id, record{Path: path}, 7)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := NewIndex(nil, "/registry")
			tt.apply(x)
			info, ok := x.Cached(string(path))
			if ok != tt.cached {
				t.Fatalf("cached = %v, want %v", ok, tt.cached)
			}
			if tt.name == "terminating then stale ready" && !info.Terminating {
				t.Fatal("stale event cleared the terminating mark")
			}
		})
	}
}
