package workspaces

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestIndexFirstAskCostsTheSame (outside attack review B-H): a caller's
// first naming of a workspace costs the same etcd reads whether it exists
// or not, and so does every later one, whoever asked before and however
// long ago (on an injected clock). A request's path is modelled as the
// hub's: Asked, then memory, then Resolve when memory misses.
func TestIndexFirstAskCostsTheSame(t *testing.T) {
	server := testserver.RunEtcd(t, nil)
	kv := &countingKV{KV: server.Client.KV}
	server.Client.KV = kv
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(1e9, 0))
	x := NewIndex(server.Client, "/registry").WithClock(clk)
	if _, err := x.EnsureRoot(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Allocate(ctx, "root:hidden"); err != nil {
		t.Fatal(err)
	}
	as := func(name string) context.Context { return request.WithUser(ctx, &user.DefaultInfo{Name: name}) }
	// probe is one request naming raw, as hub/server resolves it; it
	// returns the reads it cost.
	probe := func(ctx context.Context, raw string) int64 {
		t.Helper()
		before := kv.gets.Load()
		x.Asked(ctx, raw)
		if _, ok := x.Cached(raw); !ok {
			if _, err := x.Resolve(ctx, raw); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Resolve(%q) = %v", raw, err)
			}
		}
		return kv.gets.Load() - before
	}
	for i, step := range []struct {
		name string
		who  string
		wait time.Duration
		want int64
	}{
		{name: "mallory's first probes", who: "mallory", want: 1},
		{name: "mallory again", who: "mallory", want: 0},
		{name: "carol's first, after mallory's", who: "carol", want: 1},
		{name: "mallory past MissStale", who: "mallory", wait: MissStale, want: 1},
		{name: "mallory again", who: "mallory", want: 0},
	} {
		clk.Step(step.wait)
		// The same missing name throughout: the negative cache's states
		// (first miss, remembered, expired, remembered for another caller)
		// all come up.
		missing := "root:missing"
		ex, mi := probe(as(step.who), "root:hidden"), probe(as(step.who), missing)
		if ex != step.want || mi != step.want {
			t.Errorf("step %d %s: %d reads for an existing workspace, %d for a missing one, want %d each", i, step.name, ex, mi, step.want)
		}
	}
	// The hub's own work, without a caller, reads nothing for what memory
	// knows.
	if n := probe(ctx, "root:hidden"); n != 0 {
		t.Errorf("the hub's own resolution of a known workspace read etcd %d times", n)
	}
}
