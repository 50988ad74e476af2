package etcd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DefaultRetryBudget bounds how long a write is retried after the member
// serving it died or lost its leader: several etcd leader elections on a
// loaded machine (one takes about a second on loopback), short next to a
// client's request timeout.
const DefaultRetryBudget = 10 * time.Second

// DefaultAttemptTimeout bounds each retry (not the first attempt, which
// has only the caller's deadline). A proposal that a member forwarded to a
// leader that then died is dropped, and etcd answers it only after its own
// request timeout, about 7 s; a retry sent in the instant after the
// leader's death meets the same fate on a member that has not noticed yet.
// Cutting such an attempt is safe, as every write here is a
// compare-and-swap: if it is still applied later, the next attempt's
// compare fails and the key tells which one won.
const DefaultAttemptTimeout = 2 * time.Second

// errAttemptTimeout is the cause of a retry cut by the attempt timeout.
var errAttemptTimeout = errors.New("etcd write attempt timed out")

// RetryingKV is the kubernetes.Interface the hub's etcd3 stores write
// through. etcd's client does not retry a Txn that failed with
// "unavailable": the member may have applied it before it died, so a blind
// retry could apply it twice. Each retry here is safe instead: the store's
// writes are compare-and-swap on the key's mod revision, so a retry either
// applies exactly once, or its compare fails, and then the key itself says
// whether the first attempt was applied (see OptimisticPut, OptimisticDelete).
// When that cannot be decided the original error is returned.
type RetryingKV struct {
	kubernetes.Interface
	// KV and Watcher read the key to resolve an ambiguous attempt.
	KV      clientv3.KV
	Watcher clientv3.Watcher
	// Clock times the backoff, the budget and the attempts; Budget and
	// AttemptTimeout default to DefaultRetryBudget and
	// DefaultAttemptTimeout.
	Clock          clock.Clock
	Budget         time.Duration
	AttemptTimeout time.Duration
}

// WrapClient makes c's writes retry safely (c.Kubernetes is replaced).
func WrapClient(c *kubernetes.Client, clk clock.Clock) {
	c.Kubernetes = &RetryingKV{Interface: c.Kubernetes, KV: c.KV, Watcher: c.Watcher, Clock: clk}
}

// Retriable reports whether err may come from a member that died or lost
// its leader, so that another attempt may succeed. Every such error is
// treated as ambiguous (the write may have been applied), even those that
// etcd documents as unapplied (no leader): the resolution is right either
// way. Definite failures (compare failed, permission, too large, the
// caller's own deadline) are not retried.
func Retriable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	for _, known := range []error{rpctypes.ErrLeaderChanged, rpctypes.ErrNoLeader, rpctypes.ErrTimeoutDueToLeaderFail,
		rpctypes.ErrTimeoutDueToConnectionLost, rpctypes.ErrTimeout, rpctypes.ErrStopped, rpctypes.ErrNotCapable} {
		if errors.Is(err, known) {
			return true
		}
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code() == codes.Unavailable
	}
	return status.Code(err) == codes.Unavailable
}

// retry runs op until it returns a non-retriable result or the budget is
// spent; it reports whether any attempt before the last was ambiguous.
// The first attempt runs on ctx as it is. Retries require a leader (a
// member without one refuses at once instead of queueing the proposal)
// and are bounded by the attempt timeout.
func (r *RetryingKV) retry(ctx context.Context, what, key string, op func(ctx context.Context) error) (ambiguous bool, first, last error) {
	clk := r.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	budget := r.Budget
	if budget == 0 {
		budget = DefaultRetryBudget
	}
	attemptTimeout := r.AttemptTimeout
	if attemptTimeout == 0 {
		attemptTimeout = DefaultAttemptTimeout
	}
	// The budget runs from the first failure: a proposal cut off by a
	// leader's death fails only after etcd's own request timeout (about
	// 7 s), and must still get its retries.
	var deadline time.Time
	backoff := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		var err error
		if attempt == 0 {
			err = op(ctx)
			first = err
			deadline = clk.Now().Add(budget)
		} else {
			err = r.attempt(ctx, clk, attemptTimeout, op)
		}
		if !Retriable(err) || ctx.Err() != nil || !clk.Now().Before(deadline) {
			return attempt > 0, first, err
		}
		klog.V(2).InfoS("Retrying etcd write after a member or leader failure", "op", what, "key", key, "attempt", attempt+1, "err", err)
		select {
		case <-ctx.Done():
			return true, first, err
		case <-clk.After(backoff):
		}
		if backoff < time.Second {
			backoff *= 2
		}
	}
}

// attempt runs one retry of op, cut after timeout. An attempt cut so is
// reported as errAttemptTimeout wrapped in an Unavailable error: retriable,
// and ambiguous like any other.
func (r *RetryingKV) attempt(ctx context.Context, clk clock.Clock, timeout time.Duration, op func(ctx context.Context) error) error {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := clk.NewTimer(timeout)
	defer timer.Stop()
	go func() {
		select {
		case <-timer.C():
			cancel(errAttemptTimeout)
		case <-actx.Done():
		}
	}()
	err := op(clientv3.WithRequireLeader(actx))
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), errAttemptTimeout) {
		return status.Error(codes.Unavailable, fmt.Sprintf("%v after %s: %v", errAttemptTimeout, timeout, err))
	}
	return err
}

// OptimisticPut retries a compare-and-put that failed for want of a member
// or leader. A retry whose compare fails is resolved from the key: when
// its value and lease are exactly what this put wrote, at a mod revision
// past the expected one, the first attempt was applied. Otherwise, for an
// update (expectedRevision > 0), the key's history decides: the put could
// only apply as the first change after expectedRevision, so if that change
// is not this value, the put was not applied and the caller gets the
// conflict, as if the first attempt had failed its compare. A create's
// outcome, or an update's whose history is compacted, cannot be told:
// the caller gets the original error.
func (r *RetryingKV) OptimisticPut(ctx context.Context, key string, value []byte, expectedRevision int64, opts kubernetes.PutOptions) (kubernetes.PutResponse, error) {
	var resp kubernetes.PutResponse
	ambiguous, first, err := r.retry(ctx, "put", key, func(ctx context.Context) error {
		var err error
		resp, err = r.Interface.OptimisticPut(ctx, key, value, expectedRevision, opts)
		return err
	})
	if err != nil || resp.Succeeded || !ambiguous {
		return resp, err
	}
	ours := func(kv *mvccpb.KeyValue) bool {
		return kv != nil && kv.ModRevision > expectedRevision && bytes.Equal(kv.Value, value) && kv.Lease == int64(opts.LeaseID)
	}
	kv, err := r.current(ctx, key)
	if err != nil {
		return resp, fmt.Errorf("%w (and reading %s to resolve it: %v)", first, key, err)
	}
	if ours(kv) {
		klog.V(2).InfoS("An etcd write that failed ambiguously had been applied", "key", key, "revision", kv.ModRevision)
		return kubernetes.PutResponse{Succeeded: true, Revision: kv.ModRevision}, nil
	}
	if expectedRevision == 0 {
		return resp, first
	}
	ev, err := r.firstChangeAfter(ctx, key, expectedRevision)
	if err != nil {
		return resp, fmt.Errorf("%w (and reading the history of %s to resolve it: %v)", first, key, err)
	}
	if ev.Type == clientv3.EventTypePut && ours(ev.Kv) {
		klog.V(2).InfoS("An etcd write that failed ambiguously had been applied, and changed since", "key", key, "revision", ev.Kv.ModRevision)
		return kubernetes.PutResponse{Succeeded: true, Revision: ev.Kv.ModRevision}, nil
	}
	klog.V(2).InfoS("An etcd write that failed ambiguously had not been applied: another came first", "key", key, "revision", ev.Kv.ModRevision)
	return resp, nil
}

// OptimisticDelete retries like OptimisticPut. A retry whose compare
// fails is resolved from the key's history: the delete could only apply
// as the first change after expectedRevision. If that change deleted
// exactly that revision, the delete was applied at the revision of that
// event; if it is another, the delete was not applied and the caller gets
// the conflict. If the history has been compacted, the original error is
// returned.
func (r *RetryingKV) OptimisticDelete(ctx context.Context, key string, expectedRevision int64, opts kubernetes.DeleteOptions) (kubernetes.DeleteResponse, error) {
	var resp kubernetes.DeleteResponse
	ambiguous, first, err := r.retry(ctx, "delete", key, func(ctx context.Context) error {
		var err error
		resp, err = r.Interface.OptimisticDelete(ctx, key, expectedRevision, opts)
		return err
	})
	if err != nil || resp.Succeeded || !ambiguous {
		return resp, err
	}
	ev, err := r.firstChangeAfter(ctx, key, expectedRevision)
	if err != nil {
		return resp, fmt.Errorf("%w (and reading the history of %s to resolve it: %v)", first, key, err)
	}
	if ev.Type == clientv3.EventTypeDelete && ev.PrevKv != nil && ev.PrevKv.ModRevision == expectedRevision {
		klog.V(2).InfoS("An etcd delete that failed ambiguously had been applied", "key", key, "revision", ev.Kv.ModRevision)
		return kubernetes.DeleteResponse{Succeeded: true, Revision: ev.Kv.ModRevision}, nil
	}
	klog.V(2).InfoS("An etcd delete that failed ambiguously had not been applied: another change came first", "key", key, "revision", ev.Kv.ModRevision)
	return resp, nil
}

// current reads key (linearizably, retrying as writes do).
func (r *RetryingKV) current(ctx context.Context, key string) (*mvccpb.KeyValue, error) {
	var got *clientv3.GetResponse
	_, _, err := r.retry(ctx, "get", key, func(ctx context.Context) error {
		var err error
		got, err = r.KV.Get(ctx, key)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(got.Kvs) == 0 {
		return nil, nil
	}
	return got.Kvs[0], nil
}

// firstChangeAfter returns the first change to key after revision rev
// (with the value it replaced), retrying as writes do (a member without a
// leader ends the watch). It is called after a compare on rev failed, so
// that change exists.
func (r *RetryingKV) firstChangeAfter(ctx context.Context, key string, rev int64) (*clientv3.Event, error) {
	if r.Watcher == nil {
		return nil, errors.New("no watcher to read the history")
	}
	var ev *clientv3.Event
	_, _, err := r.retry(ctx, "history", key, func(ctx context.Context) error {
		var err error
		ev, err = r.watchFirst(ctx, key, rev)
		return err
	})
	return ev, err
}

func (r *RetryingKV) watchFirst(ctx context.Context, key string, rev int64) (*clientv3.Event, error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range r.Watcher.Watch(wctx, key, clientv3.WithRev(rev+1), clientv3.WithPrevKV()) {
		if err := wr.Err(); err != nil {
			return nil, err
		}
		if len(wr.Events) > 0 {
			return wr.Events[0], nil
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("watch closed")
}
