package workspaces

import (
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// TestHeldBackoff: a held deletion is looked at again after 1 s, 2 s, 4 s
// ... up to five minutes, never after its grace period ends, each key on
// its own, and from the start again once it is released.
func TestHeldBackoff(t *testing.T) {
	c := &Controller{held: workqueue.NewTypedItemExponentialFailureRateLimiter[string](heldBackoffBase, heldBackoffMax)}
	steps := []struct {
		key  string
		left time.Duration
		want time.Duration
	}{
		{"a", time.Hour, time.Second},
		{"a", time.Hour, 2 * time.Second},
		{"b", time.Hour, time.Second},
		{"a", time.Hour, 4 * time.Second},
		{"a", 3 * time.Second, 3 * time.Second},
		{"a", time.Hour, 16 * time.Second},
		{"a", time.Hour, 32 * time.Second},
		{"a", time.Hour, 64 * time.Second},
		{"a", time.Hour, 128 * time.Second},
		{"a", time.Hour, 256 * time.Second},
		{"a", time.Hour, 5 * time.Minute},
		{"a", time.Hour, 5 * time.Minute},
		{"b", time.Hour, 2 * time.Second},
	}
	for i, s := range steps {
		if got := c.requeueHeld(s.key, s.left); got != s.want {
			t.Fatalf("step %d (%s): requeue after %v, want %v", i, s.key, got, s.want)
		}
	}
	c.held.Forget("a")
	if got := c.requeueHeld("a", time.Hour); got != time.Second {
		t.Fatalf("after release: %v, want 1s", got)
	}
}

func TestWakesKeyFor(t *testing.T) {
	w := newWakes()
	w.hold("abcdefghijklmnop", "parent//held")
	for _, tc := range []struct {
		key  string
		want string
	}{
		{"/registry/configmaps/abcdefghijklmnop/default/x", "parent//held"},
		{"/registry/tenancy.wharf.dev/workspaces/abcdefghijklmnop/child", "parent//held"},
		{"/registry/configmaps/qqqqqqqqqqqqqqqq/default/x", ""},
	} {
		if got, _ := w.keyFor(tc.key); got != tc.want {
			t.Errorf("keyFor(%s) = %q, want %q", tc.key, got, tc.want)
		}
	}
	w.release("abcdefghijklmnop")
	if _, ok := w.keyFor("/registry/configmaps/abcdefghijklmnop/default/x"); ok {
		t.Error("released cluster still wakes")
	}
}
