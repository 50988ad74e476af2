package quota

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/component-base/metrics/testutil"
	testingclock "k8s.io/utils/clock/testing"
)

func asUser(name string, groups ...string) context.Context {
	return request.WithUser(context.Background(), &user.DefaultInfo{Name: name, Groups: groups})
}

// TestWriteRate: a tenant's writes past its burst wait for their tokens;
// one that would wait past its deadline is refused with 429 when it is
// the request's own write, and goes at once as a debt when it is a side
// effect; other tenants, hub administrators and the hub never wait.
func TestWriteRate(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, w *WriteRate, clk *testingclock.FakeClock)
	}{
		{"the burst goes at once, the next waits for its token", func(t *testing.T, w *WriteRate, clk *testingclock.FakeClock) {
			ctx := asUser("mallory")
			for range 2 {
				if err := w.Wait(ctx, "tree:m", true); err != nil {
					t.Fatal(err)
				}
			}
			waited0, _ := testutil.GetCounterMetricValue(writeWaits)
			done := make(chan error, 1)
			go func() { done <- w.Wait(ctx, "tree:m", true) }()
			waitUntil(t, clk.HasWaiters)
			select {
			case err := <-done:
				t.Fatalf("the third write went before its token: %v", err)
			default:
			}
			// Another tenant is not held meanwhile.
			if err := w.Wait(asUser("victor"), "tree:v", true); err != nil {
				t.Fatal(err)
			}
			clk.Step(time.Second)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if waited, _ := testutil.GetCounterMetricValue(writeWaits); waited-waited0 != 1 {
				t.Errorf("wharf_tenant_write_wait_seconds_total rose by %v, want 1", waited-waited0)
			}
		}},
		{"a requested write that would wait past its deadline: 429, its token given back", func(t *testing.T, w *WriteRate, clk *testingclock.FakeClock) {
			ctx, cancel := context.WithDeadline(asUser("mallory"), clk.Now().Add(500*time.Millisecond))
			defer cancel()
			_ = w.Wait(ctx, "tree:m", true)
			_ = w.Wait(ctx, "tree:m", true)
			err := w.Wait(ctx, "tree:m", true)
			if !apierrors.IsTooManyRequests(err) {
				t.Fatalf("got %v, want 429", err)
			}
			if s, ok := apierrors.SuggestsClientDelay(err); !ok || s != 1 {
				t.Errorf("Retry-After %d (%v), want 1", s, ok)
			}
			if n := w.tokens("tree:m"); n != 0 {
				t.Errorf("%v tokens after the refusal, want 0", n)
			}
		}},
		{"a side effect past its deadline goes at once, as a debt", func(t *testing.T, w *WriteRate, clk *testingclock.FakeClock) {
			ctx, cancel := context.WithDeadline(asUser("mallory"), clk.Now().Add(500*time.Millisecond))
			defer cancel()
			for range 3 {
				if err := w.Wait(ctx, "tree:m", false); err != nil {
					t.Fatal(err)
				}
			}
			if n := w.tokens("tree:m"); n != -1 {
				t.Errorf("%v tokens, want -1", n)
			}
		}},
		{"a requested write whose request ends while it waits: its token given back", func(t *testing.T, w *WriteRate, clk *testingclock.FakeClock) {
			ctx, cancel := context.WithCancel(asUser("mallory"))
			_ = w.Wait(ctx, "tree:m", true)
			_ = w.Wait(ctx, "tree:m", true)
			done := make(chan error, 1)
			go func() { done <- w.Wait(ctx, "tree:m", true) }()
			waitUntil(t, clk.HasWaiters)
			cancel()
			if err := <-done; !apierrors.IsTimeout(err) {
				t.Fatalf("got %v, want a timeout", err)
			}
			if n := w.tokens("tree:m"); n != 0 {
				t.Errorf("%v tokens, want 0", n)
			}
		}},
		{"hub administrators, system:masters and the hub's own work never wait", func(t *testing.T, w *WriteRate, clk *testingclock.FakeClock) {
			w.IsAdmin = func(u user.Info) bool { return u.GetName() == "hubadmin" }
			for _, ctx := range []context.Context{asUser("hubadmin"), asUser("loopback", user.SystemPrivilegedGroup),
				WithExempt(asUser("mallory")), context.Background()} {
				for range 10 {
					if err := w.Wait(ctx, "tree:m", true); err != nil {
						t.Fatal(err)
					}
				}
			}
			if n := w.tokens("tree:m"); n != 2 {
				t.Errorf("%v tokens, want the whole burst", n)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			tc.run(t, NewWriteRate(1, 2, clk), clk)
		})
	}
	if NewWriteRate(0, 10, testingclock.NewFakeClock(time.Now())) != nil {
		t.Error("a rate of 0 must turn pacing off")
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("gave up waiting")
		}
	}
}
