package workspaces

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
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

// TestHeldLooksPacedPerTenant (issue 24, B4): one tenant's many held
// deletions, each at the start of its backoff, are looked at no faster
// than heldLooksPerSecond after a burst of heldLooksBurst, while another
// tenant's held deletion keeps its own backoff; the grace period still
// bounds every wait.
func TestHeldLooksPacedPerTenant(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1e9, 0))
	c := &Controller{
		held:  workqueue.NewTypedItemExponentialFailureRateLimiter[string](heldBackoffBase, heldBackoffMax),
		clock: clk,
		tenantOfKey: func(key string) string {
			tenant, _, _ := strings.Cut(key, "/")
			return tenant
		},
	}
	var last time.Duration
	for i := range 40 {
		got := c.requeueHeld(fmt.Sprintf("mallory//held-%d", i), time.Hour)
		want := heldBackoffBase
		if i >= heldLooksBurst {
			// Each look past the burst a second after the one before.
			want = heldBackoffBase + time.Duration(i-heldLooksBurst+1)*time.Second/heldLooksPerSecond
		}
		if got != want {
			t.Fatalf("mallory's held deletion %d: looked at after %v, want %v", i, got, want)
		}
		last = got
	}
	if last < 30*time.Second {
		t.Fatalf("40 held deletions of one tenant looked at within %v", last)
	}
	if got := c.requeueHeld("alice//held", time.Hour); got != heldBackoffBase {
		t.Errorf("another tenant's held deletion: after %v, want its backoff %v", got, heldBackoffBase)
	}
	if got := c.requeueHeld("mallory//late", 5*time.Second); got != 5*time.Second {
		t.Errorf("past the grace period: after %v, want the 5s left", got)
	}
}
