package etcd

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Writer runs the hub's direct etcd writes (those that do not go through
// the k8s storage: the workspace index, login state and sessions, the
// replica registry, shared secrets) with RetryingKV's policy: retriable
// failures only, a leader required on retries, each retry cut after the
// attempt timeout, the budget counted from the first failure.
//
// Exactly-once is the caller's to state: Put and Delete are idempotent
// (re-sending the same value, or deleting again, is harmless), while a
// compare-and-swap Txn gets a Resolver that says, from the key, whether
// an earlier ambiguous attempt was applied when a retry's compare fails.
type Writer struct {
	// KV writes and reads; Watcher reads a key's history for resolvers
	// that need it.
	KV      clientv3.KV
	Watcher clientv3.Watcher
	// Clock, Budget and AttemptTimeout are as in RetryingKV.
	Clock          clock.Clock
	Budget         time.Duration
	AttemptTimeout time.Duration
}

// NewWriter returns a Writer on c with the default policy.
func NewWriter(c *clientv3.Client) *Writer {
	return &Writer{KV: c.KV, Watcher: c.Watcher, Clock: clock.RealClock{}}
}

func (w *Writer) kv() *RetryingKV {
	return &RetryingKV{KV: w.KV, Watcher: w.Watcher, Clock: w.Clock, Budget: w.Budget, AttemptTimeout: w.AttemptTimeout}
}

// Put writes key, re-sending on a retriable failure: the same value and
// options written twice leave the key as written once (its revision aside).
func (w *Writer) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	var resp *clientv3.PutResponse
	_, _, err := w.kv().retry(ctx, "put", key, func(ctx context.Context) error {
		var err error
		resp, err = w.KV.Put(ctx, key, val, opts...)
		return err
	})
	return resp, err
}

// Delete deletes key, re-sending on a retriable failure: a key deleted
// twice is deleted (Deleted counts only the last attempt).
func (w *Writer) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	var resp *clientv3.DeleteResponse
	_, _, err := w.kv().retry(ctx, "delete", key, func(ctx context.Context) error {
		var err error
		resp, err = w.KV.Delete(ctx, key, opts...)
		return err
	})
	return resp, err
}

// Resolver decides, after a retried Txn's compare failed, whether an
// earlier attempt had been applied, and at which revision. It reads
// through r (which retries its reads).
type Resolver func(ctx context.Context, r *RetryingKV) (applied bool, rev int64, err error)

// Txn commits the transaction that build makes from a fresh Txn, retrying
// it as Put does. A Txn without a compare, or whose compare stays true
// once applied, may pass a nil resolve: re-sending it is harmless. When a
// retry's compare fails and an earlier attempt was ambiguous, resolve
// decides: applied, the response is reported as succeeded at that
// revision (its Responses are those of the retry's Else branch); not
// applied, the failed compare is the caller's, as without failures. When
// resolve cannot tell, the first error is returned.
func (w *Writer) Txn(ctx context.Context, key string, build func(clientv3.Txn) clientv3.Txn, resolve Resolver) (*clientv3.TxnResponse, error) {
	r := w.kv()
	var resp *clientv3.TxnResponse
	ambiguous, first, err := r.retry(ctx, "txn", key, func(ctx context.Context) error {
		var err error
		resp, err = build(w.KV.Txn(ctx)).Commit()
		return err
	})
	if err != nil || resp.Succeeded || !ambiguous || resolve == nil {
		return resp, err
	}
	applied, rev, err := resolve(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("%w (and resolving whether it was applied from %s: %v)", first, key, err)
	}
	if !applied {
		klog.V(2).InfoS("An etcd transaction that failed ambiguously had not been applied", "key", key)
		return resp, nil
	}
	klog.V(2).InfoS("An etcd transaction that failed ambiguously had been applied", "key", key, "revision", rev)
	hdr := &etcdserverpb.ResponseHeader{Revision: rev}
	if h := resp.Header; h != nil {
		hdr.ClusterId, hdr.MemberId, hdr.RaftTerm = h.ClusterId, h.MemberId, h.RaftTerm
	}
	return &clientv3.TxnResponse{Header: hdr, Succeeded: true, Responses: resp.Responses}, nil
}

// ValueIs resolves a create-if-absent Txn that wrote val on key with
// lease (0 for none): it was applied when the key now holds exactly that.
// It tells right only when no one else could write the same value and
// lease, which holds when val or lease is unique to this write (a fresh
// id, a fresh lease, a random secret).
func ValueIs(key string, val []byte, lease clientv3.LeaseID) Resolver {
	return func(ctx context.Context, r *RetryingKV) (bool, int64, error) {
		kv, err := r.current(ctx, key)
		if err != nil {
			return false, 0, err
		}
		if kv != nil && bytes.Equal(kv.Value, val) && kv.Lease == int64(lease) {
			return true, kv.ModRevision, nil
		}
		return false, 0, nil
	}
}

// FirstChangeIs resolves a Txn that put val on key if its mod revision was
// still rev: that put could only apply as the first change after rev, so
// the key's history decides even if the key changed again since. A
// compacted history cannot tell (an error).
func FirstChangeIs(key string, rev int64, val []byte) Resolver {
	return func(ctx context.Context, r *RetryingKV) (bool, int64, error) {
		ev, err := r.firstChangeAfter(ctx, key, rev)
		if err != nil {
			return false, 0, err
		}
		if ev.Type == clientv3.EventTypePut && bytes.Equal(ev.Kv.Value, val) {
			return true, ev.Kv.ModRevision, nil
		}
		return false, 0, nil
	}
}

// Do runs op with the same policy, for an operation whose doubling is
// harmless, such as granting a lease (one granted by an attempt that
// failed ambiguously is never used, and expires at its TTL).
func (w *Writer) Do(ctx context.Context, what string, op func(ctx context.Context) error) error {
	_, _, err := w.kv().retry(ctx, what, "", op)
	return err
}
