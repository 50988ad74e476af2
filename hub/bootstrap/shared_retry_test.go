package bootstrap

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wharfhub/wharf/hub/etcd"
)

// dyingKV stands for an etcd member that applies the next `fails`
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
	r, err := t.Txn.Commit()
	if err == nil && t.d.fails.Add(-1) >= 0 {
		return nil, status.Error(codes.Unavailable, "connection reset by peer")
	}
	return r, err
}

// TestSharedSecretSurvivesAmbiguousFailure: a first start whose create a
// dying member applied without answering gets the value it wrote, and so
// does every later start.
func TestSharedSecretSurvivesAmbiguousFailure(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := etcd.StartEmbedded(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientURL}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	w := etcd.NewWriter(c)
	kv := &dyingKV{KV: c.KV}
	kv.fails.Store(2)
	w.KV = kv
	gen := func(v string) func() ([]byte, error) { return func() ([]byte, error) { return []byte(v), nil } }
	got, err := sharedSecret(ctx, c, w, "/registry", "s", gen("first"))
	if err != nil || !bytes.Equal(got, []byte("first")) {
		t.Fatalf("first start = %q, %v; want %q", got, err, "first")
	}
	if again, err := SharedSecret(ctx, c, "/registry", "s", gen("second")); err != nil || !bytes.Equal(again, got) {
		t.Fatalf("later start = %q, %v; want %q", again, err, got)
	}
}
