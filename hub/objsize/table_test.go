package objsize

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/wharfhub/wharf/hub/cluster"
)

// Two workspaces: a1 in alice's home tree, b1 in bob's.
func testResolve(raw string) (cluster.ID, cluster.Path, bool) {
	switch raw {
	case "a1", "root:users:alice":
		return "a1", "root:users:alice", true
	case "a2", "root:users:alice:w":
		return "a2", "root:users:alice:w", true
	case "b1", "root:users:bob":
		return "b1", "root:users:bob", true
	}
	return "", "", false
}

const big = 960_076

func cmKey(id, name string) string { return "/core/configmaps/" + id + "/default/" + name }

func TestTableLearnsWritesAndRaisesOnReads(t *testing.T) {
	tb := newTable(testResolve, 10, 100)
	k := cmKey("a1", "big")
	tb.Stored(k, big, true)
	if n, ok := tb.Size(k); !ok || n != big {
		t.Fatalf("after a write of %d bytes: %d %v", big, n, ok)
	}
	// A read of an old, smaller revision does not lower it.
	tb.Stored(k, Threshold*2, false)
	if n, _ := tb.Size(k); n != big {
		t.Errorf("a read of an older revision lowered the size to %d", n)
	}
	// A read of a larger one raises it (another replica's write).
	tb.Stored(k, big+1, false)
	if n, _ := tb.Size(k); n != big+1 {
		t.Errorf("a larger read: %d, want %d", n, big+1)
	}
	// A write that shrinks it sets it; below the threshold, forgets it.
	tb.Stored(k, Threshold*2, true)
	if n, _ := tb.Size(k); n != Threshold*2 {
		t.Errorf("a shrinking write: %d, want %d", n, Threshold*2)
	}
	tb.Stored(k, 100, true)
	if _, ok := tb.Size(k); ok {
		t.Error("an object written below the threshold is still remembered")
	}
	// Small reads are never remembered.
	tb.Stored(cmKey("a1", "small"), Threshold-1, false)
	if _, ok := tb.Size(cmKey("a1", "small")); ok {
		t.Error("a small object is remembered")
	}
}

func TestTableBoundsPerTenant(t *testing.T) {
	tb := newTable(testResolve, 3, 5)
	tb.Stored(cmKey("b1", "bobs"), Threshold, true)
	tb.Stored(cmKey("a1", "target"), big, true)
	// Alice stores more objects than her bound, in two workspaces of
	// her tree: her smallest are forgotten, never her biggest, and
	// never bob's.
	for i := range 10 {
		tb.Stored(cmKey([]string{"a1", "a2"}[i%2], fmt.Sprintf("o%d", i)), Threshold+i, true)
	}
	if _, ok := tb.Size(cmKey("a1", "target")); !ok {
		t.Error("alice's biggest object was forgotten by her own smaller ones")
	}
	if _, ok := tb.Size(cmKey("b1", "bobs")); !ok {
		t.Error("bob's entry was evicted by alice's")
	}
	if n := len(tb.tenants["tree:root:users:alice"]); n != 3 {
		t.Errorf("alice holds %d entries, want her bound, 3", n)
	}
	// The hub-wide bound takes from the tenant holding the most.
	tb.Stored(cmKey("b1", "bobs2"), Threshold, true)
	tb.Stored(cmKey("x9", "unknown-workspace"), Threshold, true)
	if len(tb.entries) > 5 {
		t.Errorf("%d entries, over the hub's bound of 5", len(tb.entries))
	}
	if _, ok := tb.Size(cmKey("b1", "bobs")); !ok {
		t.Error("bob's entry was evicted while alice held more")
	}
}

func TestStoredSizeOnlyForTheOwningTenantOrWhoMay(t *testing.T) {
	var mayUser string
	tb := NewTable(testResolve, func(_ context.Context, id cluster.ID, info *request.RequestInfo) bool {
		// carol may patch in alice's workspace, bob may not.
		return id == "a2" && info.Verb == "patch" && mayUser == "carol"
	})
	tb.Stored(cmKey("a2", "big"), big, true)
	info := &request.RequestInfo{IsResourceRequest: true, Verb: "patch", Resource: "configmaps", Namespace: "default", Name: "big"}
	for _, tt := range []struct {
		raw, tenant string
		want        bool
	}{
		{"root:users:alice:w", "tree:root:users:alice", true},
		{"a2", "tree:root:users:alice", true},
		{"root:users:alice:w", "tree:root:users:bob", false},
		{"root:users:alice:w", "tree:root:users:carol", true},
		{"root:users:alice", "tree:root:users:alice", false}, // another workspace
		{"missing", "tree:root:users:alice", false},
	} {
		ctx := cluster.WithTarget(context.Background(), cluster.Target{Raw: tt.raw, Explicit: true})
		mayUser = strings.TrimPrefix(tt.tenant, "tree:root:users:")
		n, ok := tb.StoredSize(ctx, tt.tenant, info)
		if ok != tt.want || (ok && n != big) {
			t.Errorf("%s as %s: %d %v, want known=%v", tt.raw, tt.tenant, n, ok, tt.want)
		}
	}
	cm := *info
	cm.Name = ""
	ctx := cluster.WithTarget(context.Background(), cluster.Target{Raw: "a2", Explicit: true})
	if _, ok := tb.StoredSize(ctx, "tree:root:users:alice", &cm); ok {
		t.Error("a request naming no object is weighed")
	}
}
