package server

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/server/healthz"
	clocktesting "k8s.io/utils/clock/testing"
)

// The etcd readiness check fails only after etcd has failed (or hung)
// for the whole grace period; any success resets it.
func TestTolerantEtcdCheck(t *testing.T) {
	type step struct {
		advance time.Duration // before the check
		inner   string        // "ok", "fail" or "hang"
		wantErr bool
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"healthy", []step{{0, "ok", false}, {time.Second, "ok", false}}},
		{"blip shorter than grace", []step{{0, "fail", false}, {2 * time.Second, "fail", false}, {500 * time.Millisecond, "ok", false}}},
		{"outage longer than grace", []step{{0, "fail", false}, {2 * time.Second, "fail", false}, {2 * time.Second, "fail", true}, {0, "ok", false}}},
		{"success resets the grace", []step{{0, "fail", false}, {2 * time.Second, "ok", false}, {2 * time.Second, "fail", false}, {2 * time.Second, "fail", false}}},
		{"hanging probe counts as failing", []step{{0, "hang", false}, {3 * time.Second, "hang", true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fc := clocktesting.NewFakeClock(time.Unix(1000, 0))
			// The inner check runs in a goroutine of its own that may
			// read the mode after its step timed out: atomic.
			var mode atomic.Value
			mode.Store("")
			release := make(chan struct{})
			defer close(release)
			inner := healthz.NamedGroupedCheck("etcd-readiness", "etcd-readiness", func(*http.Request) error {
				switch mode.Load().(string) {
				case "fail":
					return errors.New("etcdserver: no leader")
				case "hang":
					<-release
					return errors.New("timed out")
				}
				return nil
			})
			checks := []healthz.HealthChecker{healthz.PingHealthz, inner}
			tolerateEtcdBlips(checks, fc)
			c, ok := checks[1].(*tolerantCheck)
			if !ok || checks[0] != healthz.PingHealthz {
				t.Fatalf("checks not replaced as expected: %T %T", checks[0], checks[1])
			}
			if c.GroupName() != "etcd-readiness" {
				t.Errorf("group %q", c.GroupName())
			}
			for i, s := range tc.steps {
				fc.Step(s.advance)
				mode.Store(s.inner)
				if s.inner == "hang" {
					// Let the check's wait run out on the fake clock.
					go func() {
						for !fc.HasWaiters() {
							time.Sleep(time.Millisecond)
						}
						fc.Step(etcdReadyWait)
					}()
				}
				err := c.Check(&http.Request{})
				if (err != nil) != s.wantErr {
					t.Fatalf("step %d (%s after %s): err = %v, want error %v", i, s.inner, s.advance, err, s.wantErr)
				}
			}
		})
	}
}
