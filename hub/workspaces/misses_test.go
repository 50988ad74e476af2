package workspaces

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	clocktesting "k8s.io/utils/clock/testing"
)

// countingKV counts the reads that reach the real etcd behind it.
type countingKV struct {
	clientv3.KV
	gets atomic.Int64
}

func (c *countingKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	c.gets.Add(1)
	return c.KV.Get(ctx, key, opts...)
}

// TestIndexRemembersMisses (outside attack review, row 3): resolving a
// workspace that does not exist must cost what resolving one that exists
// does, so that requests to either hold their seats alike. An existing
// workspace is found in memory; a missing one once cost a quorum read per
// authorizer step and request. Now concurrent first misses share one
// read, and a miss is answered from memory, checked again in the
// background past MissTTL (on an injected clock).
func TestIndexRemembersMisses(t *testing.T) {
	server := testserver.RunEtcd(t, nil)
	kv := &countingKV{KV: server.Client.KV}
	server.Client.KV = kv
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(1e9, 0))
	x := NewIndex(server.Client, "/registry").WithClock(clk)
	if _, err := x.EnsureRoot(ctx); err != nil {
		t.Fatal(err)
	}
	hidden, err := x.Allocate(ctx, "root:users:alice")
	if err != nil {
		t.Fatal(err)
	}
	// flood resolves raw from 200 goroutines at once and returns the etcd
	// reads it cost.
	flood := func(raw string, wantErr error) int64 {
		t.Helper()
		before := kv.gets.Load()
		var wg sync.WaitGroup
		for i := 0; i < 200; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := x.Resolve(ctx, raw); !errors.Is(err, wantErr) {
					t.Errorf("Resolve(%q) = %v, want %v", raw, err, wantErr)
				}
			}()
		}
		wg.Wait()
		return kv.gets.Load() - before
	}
	if n := flood("root:users:alice", nil); n != 0 {
		t.Errorf("existing workspace: %d etcd reads, want 0", n)
	}
	if n := flood(string(hidden), nil); n != 0 {
		t.Errorf("existing workspace by id: %d etcd reads, want 0", n)
	}
	if n := flood("root:users:nobody", ErrNotFound); n != 1 {
		t.Errorf("missing workspace: %d etcd reads for 200 resolutions, want 1", n)
	}
	if n := flood("0000000000000000", ErrNotFound); n != 1 {
		t.Errorf("missing id: %d etcd reads for 200 resolutions, want 1", n)
	}
	clk.Step(MissTTL - time.Millisecond)
	if n := flood("root:users:nobody", ErrNotFound); n != 0 {
		t.Errorf("missing workspace within MissTTL: %d etcd reads, want 0", n)
	}
	// Older than MissTTL: still answered from memory, and checked again
	// by one read in the background.
	clk.Step(time.Millisecond)
	before := kv.gets.Load()
	flood("root:users:nobody", ErrNotFound)
	// Untimed: poll until the background read has renewed the miss.
	for !x.misses.fresh("root:users:nobody") {
		time.Sleep(time.Millisecond)
	}
	if n := kv.gets.Load() - before; n != 1 {
		t.Errorf("checking a miss again: %d etcd reads, want 1", n)
	}
	if n := flood("root:users:nobody", ErrNotFound); n != 0 {
		t.Errorf("after the background read: %d etcd reads, want 0", n)
	}

	// Created through this replica: found at once, whatever was missed.
	id, err := x.Allocate(ctx, "root:users:nobody")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := x.Resolve(ctx, "root:users:nobody"); err != nil || info.ID != id {
		t.Fatalf("after Allocate: %+v, %v; want %s", info, err, id)
	}
	// Created through another replica whose write this one has not seen
	// (no watch runs here): the remembered miss holds until its check in
	// the background finds the workspace, then etcd is read.
	if _, err := x.Resolve(ctx, "root:users:later"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("before creation: %v", err)
	}
	other := NewIndex(server.Client, "/registry")
	later, err := other.Allocate(ctx, "root:users:later")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Resolve(ctx, "root:users:later"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("within MissTTL of the miss: %v, want the remembered miss", err)
	}
	// Except for the hub's own caller that knows it was stored (a home
	// create that lost to another replica with AlreadyExists): it reads
	// etcd past the remembered miss, and clears it.
	if _, err := x.Resolve(ctx, "root:users:later2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("before creation: %v", err)
	}
	later2, err := other.Allocate(ctx, "root:users:later2")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := x.ResolveStored(ctx, "root:users:later2"); err != nil || info.ID != later2 {
		t.Fatalf("ResolveStored past a remembered miss: %+v, %v; want %s", info, err, later2)
	}
	if x.misses.remembered("root:users:later2") {
		t.Error("ResolveStored's hit left the miss remembered")
	}
	clk.Step(MissTTL)
	if _, err := x.Resolve(ctx, "root:users:later"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("past MissTTL: %v, want the remembered miss while it is checked", err)
	}
	// Untimed: poll until the background check has dropped the miss.
	for {
		if info, err := x.Resolve(ctx, "root:users:later"); err == nil {
			if info.ID != later {
				t.Fatalf("found %s, want %s", info.ID, later)
			}
			break
		}
		time.Sleep(time.Millisecond)
	}
	// A miss whose checks keep failing is no longer believed after
	// MissStale: the caller reads.
	if _, err := x.Resolve(ctx, "root:users:gone"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	x.misses.mu.Lock()
	v, _ := x.misses.entries.Get("root:users:gone")
	v.(*missEntry).refreshing = true // as if a check were stuck
	x.misses.mu.Unlock()
	clk.Step(MissStale)
	before = kv.gets.Load()
	if _, err := x.Resolve(ctx, "root:users:gone"); !errors.Is(err, ErrNotFound) || kv.gets.Load() == before {
		t.Fatalf("past MissStale: %v after %d reads, want a read", err, kv.gets.Load()-before)
	}
}
