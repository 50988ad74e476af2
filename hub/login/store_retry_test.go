package login

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// dyingKV stands for an etcd member that applies the next `fails` writes
// and then dies before answering.
type dyingKV struct {
	clientv3.KV
	fails atomic.Int32
}

func (d *dyingKV) die(err error) error {
	if err == nil && d.fails.Add(-1) >= 0 {
		return status.Error(codes.Unavailable, "connection reset by peer")
	}
	return err
}

func (d *dyingKV) Put(ctx context.Context, k, v string, o ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	r, err := d.KV.Put(ctx, k, v, o...)
	return r, d.die(err)
}

func (d *dyingKV) Delete(ctx context.Context, k string, o ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	r, err := d.KV.Delete(ctx, k, o...)
	return r, d.die(err)
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
	r, err := t.Txn.Commit()
	return r, t.d.die(err)
}

// TestStoreSurvivesAmbiguousFailures: each write of the login store that
// a dying member applied without answering counts once: a state consumed
// so is fresh (not a replay), a session update is not a lost race, and a
// replay or a real race is still refused.
func TestStoreSurvivesAmbiguousFailures(t *testing.T) {
	db, err := newStore(testEtcd(t), "/registry", testKey(t))
	if err != nil {
		t.Fatal(err)
	}
	kv := &dyingKV{KV: db.c.KV}
	db.w.KV = kv
	ctx := context.Background()
	until := time.Now().Add(time.Minute)

	kv.fails.Store(1)
	if fresh, err := db.consumeState(ctx, "s-1", until); err != nil || !fresh {
		t.Fatalf("consumeState = %v, %v; want fresh", fresh, err)
	}
	kv.fails.Store(1)
	if fresh, err := db.consumeState(ctx, "s-1", until); err != nil || fresh {
		t.Fatalf("replayed consumeState = %v, %v; want used", fresh, err)
	}

	kv.fails.Store(1)
	if err := db.createSession(ctx, "sess", record{Current: "c1"}, until); err != nil {
		t.Fatalf("createSession = %v", err)
	}
	got, rev, err := db.getSession(ctx, "sess")
	if err != nil || got.Current != "c1" {
		t.Fatalf("getSession = %+v, %v", got, err)
	}
	kv.fails.Store(1)
	if ok, err := db.updateSession(ctx, "sess", rev, record{Current: "c2"}); err != nil || !ok {
		t.Fatalf("updateSession = %v, %v; want applied", ok, err)
	}
	// The revision read before is stale now: a real lost race.
	kv.fails.Store(1)
	if ok, err := db.updateSession(ctx, "sess", rev, record{Current: "c3"}); err != nil || ok {
		t.Fatalf("stale updateSession = %v, %v; want refused", ok, err)
	}
	if got, _, err := db.getSession(ctx, "sess"); err != nil || got.Current != "c2" {
		t.Fatalf("session after updates = %+v, %v", got, err)
	}
	kv.fails.Store(1)
	if err := db.deleteSession(ctx, "sess"); err != nil {
		t.Fatalf("deleteSession = %v", err)
	}
	if _, _, err := db.getSession(ctx, "sess"); err != errNoSession {
		t.Fatalf("getSession after delete = %v, want errNoSession", err)
	}
}
