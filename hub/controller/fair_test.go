package controller

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
)

// tenantOfKey charges "a/1" to tenant "a".
func tenantOfKey(k string) string { t, _, _ := strings.Cut(k, "/"); return t }

// drain takes every queued item in order, marking each done at once.
func drain(q workqueue.TypedInterface[string]) []string {
	var out []string
	for q.Len() > 0 {
		k, _ := q.Get()
		out = append(out, k)
		q.Done(k)
	}
	return out
}

func TestFairTurns(t *testing.T) {
	for _, tc := range []struct {
		name string
		adds []string
		want []string
	}{{
		name: "one tenant is FIFO",
		adds: []string{"a/1", "a/2", "a/3"},
		want: []string{"a/1", "a/2", "a/3"},
	}, {
		name: "a backlog delays another tenant by one item",
		adds: []string{"a/1", "a/2", "a/3", "a/4", "a/5", "v/1"},
		want: []string{"a/1", "v/1", "a/2", "a/3", "a/4", "a/5"},
	}, {
		name: "round robin in order of first arrival",
		adds: []string{"a/1", "a/2", "a/3", "b/1", "b/2", "c/1"},
		want: []string{"a/1", "b/1", "c/1", "a/2", "b/2", "a/3"},
	}, {
		name: "duplicates keep their place",
		adds: []string{"a/1", "a/2", "a/1", "b/1", "a/2"},
		want: []string{"a/1", "b/1", "a/2"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			q := NewFair(FairConfig[string]{TenantOf: tenantOfKey})
			defer q.ShutDown()
			for _, k := range tc.adds {
				q.Add(k)
			}
			if got := drain(q); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("order = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFairVictimAmongBacklog is B4/B7 in miniature: a thousand items of
// one tenant, then one of another; the second is handed out second.
func TestFairVictimAmongBacklog(t *testing.T) {
	q := NewFair(FairConfig[string]{TenantOf: tenantOfKey})
	defer q.ShutDown()
	for i := 0; i < 1000; i++ {
		q.Add("attacker/" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "-" + time.Duration(i).String())
	}
	n := q.Len()
	q.Add("victim/dependent")
	for i := 0; ; i++ {
		k, _ := q.Get()
		q.Done(k)
		if k == "victim/dependent" {
			if i > 1 {
				t.Fatalf("victim's item handed out after %d of the attacker's %d", i, n)
			}
			return
		}
	}
}

func TestFairProcessingAndDirty(t *testing.T) {
	q := NewFair(FairConfig[string]{TenantOf: tenantOfKey})
	defer q.ShutDown()
	q.Add("a/1")
	k, _ := q.Get()
	// Added again while processing: not handed to a second worker...
	q.Add("a/1")
	if q.Len() != 0 {
		t.Fatalf("len while processing = %d, want 0", q.Len())
	}
	q.Add("b/1")
	// ...but queued again, behind b, once done.
	q.Done(k)
	if got := drain(q); strings.Join(got, " ") != "b/1 a/1" {
		t.Fatalf("order = %v, want [b/1 a/1]", got)
	}
}

func TestFairDelayed(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	q := NewFair(FairConfig[string]{TenantOf: tenantOfKey, Clock: clk,
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 4*time.Second)})
	defer q.ShutDown()

	q.AddAfter("a/later", 10*time.Second)
	q.AddRateLimited("b/retry") // 1 s
	if q.Len() != 0 {
		t.Fatalf("len before any delay passed = %d", q.Len())
	}
	wantLen := func(n int) {
		t.Helper()
		// The delaying queue moves ready items from its own goroutine.
		for i := 0; i < 30000 && q.Len() != n; i++ {
			time.Sleep(time.Millisecond)
		}
		if q.Len() != n {
			t.Fatalf("len = %d, want %d", q.Len(), n)
		}
	}
	clk.Step(time.Second)
	wantLen(1)
	if k, _ := q.Get(); k != "b/retry" {
		t.Fatalf("got %q, want b/retry", k)
	} else {
		q.Done(k)
	}
	if n := q.NumRequeues("b/retry"); n != 1 {
		t.Fatalf("requeues = %d, want 1", n)
	}
	q.Forget("b/retry")
	if n := q.NumRequeues("b/retry"); n != 0 {
		t.Fatalf("requeues after Forget = %d", n)
	}
	clk.Step(9 * time.Second)
	wantLen(1)
	if k, _ := q.Get(); k != "a/later" {
		t.Fatalf("got %q, want a/later", k)
	}
}
