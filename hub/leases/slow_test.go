package leases

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wharfhub/wharf/test/kube"
)

// stalling lets the API hang the first renewal write (an update or a
// patch after the Lease was created) until the test releases it, as a hub
// whose CPU is taken leaves one request waiting for seconds; every other
// call goes through. The stall does not end on the write's own deadline,
// which is on the real clock: the test's time is the fake one.
type stalling struct {
	coordinationv1client.LeasesGetter
	writes  *atomic.Int32
	stalled chan struct{} // closed when the stalled write began
	release chan struct{} // closed by the test to end the stall
	// stalling is set while the stalled write has not returned; passed
	// counts the writes that succeeded meanwhile.
	stalling *atomic.Bool
	passed   *atomic.Int32
}

func (s stalling) Leases(ns string) coordinationv1client.LeaseInterface {
	return stallingLeases{s.LeasesGetter.Leases(ns), s}
}

type stallingLeases struct {
	coordinationv1client.LeaseInterface
	s stalling
}

func (l stallingLeases) stall(ctx context.Context) bool {
	if l.s.writes.Add(1) != 1 {
		return false
	}
	l.s.stalling.Store(true)
	close(l.s.stalled)
	<-l.s.release
	l.s.stalling.Store(false)
	return true
}

var errStalled = errors.New("stalled write released")

// through counts a successful write made while the first one stalls.
func (l stallingLeases) through(err error) {
	if err == nil && l.s.stalling.Load() {
		l.s.passed.Add(1)
	}
}

func (l stallingLeases) Update(ctx context.Context, lease *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if l.stall(ctx) {
		return nil, errStalled
	}
	got, err := l.LeaseInterface.Update(ctx, lease, o)
	l.through(err)
	return got, err
}

func (l stallingLeases) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*coordinationv1.Lease, error) {
	if l.stall(ctx) {
		return nil, errStalled
	}
	got, err := l.LeaseInterface.Patch(ctx, name, pt, data, o, sub...)
	l.through(err)
	return got, err
}

// logLines records the messages a Gate logs, at every verbosity.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, msg) {
			n++
		}
	}
	return n
}

// One renewal stuck in a loaded API does not cost the lease: the next
// renewal starts a RetryPeriod later anyway, and its success moves the
// fence. Before, the holder waited for the stuck one until its fence and
// stopped the provider (review B-A, B-B, B-C: lease gaps of 6–9 s and
// fence stops on a hub whose CPU a tenant's requests took). Time is a fake
// clock stepped by the test, so the machine's load cannot change the
// outcome.
func TestGateRenewsPastAStalledRenewal(t *testing.T) {
	cl := kube.Start(t, kube.Options{})
	fc := clocktesting.NewFakeClock(time.Now())
	timings := DefaultTimings()
	s := stalling{LeasesGetter: cl.Clientset(t).CoordinationV1(), writes: &atomic.Int32{}, stalled: make(chan struct{}), release: make(chan struct{}), stalling: &atomic.Bool{}, passed: &atomic.Int32{}}
	g, err := New(Config{Client: s, Identity: "hub-a", Timings: timings, Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	logs := &logLines{}
	logger := funcr.New(func(prefix, args string) {
		logs.mu.Lock()
		logs.lines = append(logs.lines, args)
		logs.mu.Unlock()
	}, funcr.Options{Verbosity: 4})
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logger))
	var leading, fenced atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Run(ctx, "slow", func(lctx context.Context) {
			leading.Store(true)
			<-lctx.Done()
			fenced.Store(ctx.Err() == nil)
		}, func(string) {})
	}()
	t.Cleanup(func() { cancel(); <-done })
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(s.release) }) }
	t.Cleanup(release) // runs first

	waitFor(t, "hub-a to lead", leading.Load)
	// The renewal timer and the fence, beside the ticker acquire used (a
	// fake ticker stays a waiter after Stop).
	waitFor(t, "the holder's timers", func() bool { return fc.Waiters() == 3 })
	fc.Step(timings.RetryPeriod)
	waitFor(t, "the first renewal to stall", func() bool {
		select {
		case <-s.stalled:
			return true
		default:
			return false
		}
	})
	// The stalled renewal began at 1 s, the fence is at 3.25 s. A second
	// later the next renewal starts, and succeeds while the first one
	// still stalls (before, the holder waited for the first one).
	fc.Step(timings.RetryPeriod)
	waitFor(t, "a renewal to succeed while the first one stalls", func() bool { return s.passed.Load() > 0 })
	release()
	// Every further second a renewal starts and succeeds; the test steps
	// on only once the holder has taken in each success (its log), past
	// where the fence was, to 10 s.
	for i := 1; i <= 9; i++ {
		if i > 1 {
			fc.Step(timings.RetryPeriod)
		}
		waitFor(t, "a renewal while the first one is stalled", func() bool {
			return logs.count("Renewed provider lease") >= i || fenced.Load()
		})
		if fenced.Load() {
			t.Fatalf("the holder stopped the provider %s after taking the lease, with one renewal stalled", time.Duration(i+1)*timings.RetryPeriod)
		}
	}
	if n := logs.count("Could not renew provider lease"); n > 0 {
		t.Fatalf("the fence fired %d times", n)
	}
	lease, err := cl.Clientset(t).CoordinationV1().Leases("kube-system").Get(t.Context(), LeaseName("slow"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := lease.Spec.RenewTime.Time; !got.Equal(fc.Now().Truncate(time.Microsecond)) {
		t.Errorf("renewTime %s, want the last renewal's start %s", got, fc.Now())
	}
}
