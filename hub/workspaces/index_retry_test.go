package workspaces

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
)

// dyingKV stands for an etcd member that applies the first `fails`
// transactions and then dies before answering.
type dyingKV struct {
	clientv3.KV
	fails atomic.Int32
}

func (d *dyingKV) Txn(ctx context.Context) clientv3.Txn { return &dyingTxn{Txn: d.KV.Txn(ctx), d: d} }

type dyingTxn struct {
	clientv3.Txn
	d *dyingKV
}

func (t *dyingTxn) If(cs ...clientv3.Cmp) clientv3.Txn   { t.Txn = t.Txn.If(cs...); return t }
func (t *dyingTxn) Then(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Then(ops...); return t }
func (t *dyingTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Else(ops...); return t }

func (t *dyingTxn) Commit() (*clientv3.TxnResponse, error) {
	resp, err := t.Txn.Commit()
	if err == nil && t.d.fails.Add(-1) >= 0 {
		return nil, status.Error(codes.Unavailable, "connection reset by peer")
	}
	return resp, err
}

// TestIndexSurvivesAmbiguousFailures checks that each index write applied
// by a member that died before answering is reported as done, once: an
// Allocate is not mistaken for a taken path, a delete is not an error.
func TestIndexSurvivesAmbiguousFailures(t *testing.T) {
	server := testserver.RunEtcd(t, nil)
	ctx := context.Background()
	x := NewIndex(server.Client, "/registry")
	kv := &dyingKV{KV: server.Client.KV}
	x.writes.KV = kv
	other := NewIndex(server.Client, "/registry")

	kv.fails.Store(1)
	id, err := x.Allocate(ctx, "root:acme")
	if err != nil {
		t.Fatalf("Allocate after an applied, unanswered attempt = %v, want the id", err)
	}
	if info, err := other.Resolve(ctx, "root:acme"); err != nil || info.ID != id {
		t.Fatalf("Resolve = %+v, %v; want %q", info, err, id)
	}
	// A real conflict is still one, failures or not.
	kv.fails.Store(1)
	if _, err := x.Allocate(ctx, "root:acme"); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate Allocate = %v, want ErrExists", err)
	}

	kv.fails.Store(2)
	if err := x.MarkTerminating(ctx, id, "root:acme"); err != nil {
		t.Fatalf("MarkTerminating = %v", err)
	}
	if info, err := other.Resolve(ctx, string(id)); err != nil || !info.Terminating {
		t.Fatalf("Resolve after MarkTerminating = %+v, %v; want terminating", info, err)
	}
	kv.fails.Store(1)
	if err := x.Release(ctx, id, "root:acme"); err != nil {
		t.Fatalf("Release = %v", err)
	}
	if _, err := other.Resolve(ctx, "root:acme"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Resolve after Release = %v, want ErrNotFound", err)
	}
}
