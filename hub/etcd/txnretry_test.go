package etcd

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/utils/clock"
)

// faultyKV stands for a member that dies around a direct write: for the
// first `fails` writes it applies the write on the real etcd and then
// reports err (applied=true), or reports err without applying. between
// runs after the first failed attempt (another writer).
type faultyKV struct {
	clientv3.KV
	fails   int32
	applied bool
	err     error
	between func()
	calls   atomic.Int32
}

// failing runs do (the real write) as the fault says, and reports whether
// the caller must return the injected error instead of doing it itself.
func (f *faultyKV) failing(do func() error) (bool, error) {
	n := f.calls.Add(1)
	if n > f.fails {
		return false, nil
	}
	if f.applied {
		if err := do(); err != nil {
			return true, err
		}
	}
	if f.between != nil && n == 1 {
		f.between()
	}
	err := f.err
	if err == nil {
		err = status.Error(codes.Unavailable, "connection reset by peer")
	}
	return true, err
}

func (f *faultyKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	if ok, err := f.failing(func() error { _, err := f.KV.Put(ctx, key, val, opts...); return err }); ok {
		return nil, err
	}
	return f.KV.Put(ctx, key, val, opts...)
}

func (f *faultyKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	if ok, err := f.failing(func() error { _, err := f.KV.Delete(ctx, key, opts...); return err }); ok {
		return nil, err
	}
	return f.KV.Delete(ctx, key, opts...)
}

func (f *faultyKV) Txn(ctx context.Context) clientv3.Txn {
	return &faultyTxn{Txn: f.KV.Txn(ctx), f: f}
}

// faultyTxn records the transaction's parts so that a failing Commit can
// still apply it on the real etcd.
type faultyTxn struct {
	clientv3.Txn
	f *faultyKV
}

func (t *faultyTxn) If(cs ...clientv3.Cmp) clientv3.Txn   { t.Txn = t.Txn.If(cs...); return t }
func (t *faultyTxn) Then(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Then(ops...); return t }
func (t *faultyTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Else(ops...); return t }

func (t *faultyTxn) Commit() (*clientv3.TxnResponse, error) {
	if ok, err := t.f.failing(func() error { _, err := t.Txn.Commit(); return err }); ok {
		return nil, err
	}
	return t.Txn.Commit()
}

func TestWriter(t *testing.T) {
	ctx := context.Background()
	e, err := StartEmbedded(ctx, filepath.Join(t.TempDir(), "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientURL}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	put := func(key, val string) int64 {
		resp, err := c.Put(ctx, key, val)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	get := func(key string) string {
		resp, err := c.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return "<none>"
		}
		return string(resp.Kvs[0].Value)
	}

	const (
		opPut    = "put"
		opDelete = "delete"
		opCreate = "create" // create-if-absent, resolved by ValueIs
		opUpdate = "update" // compare mod revision, resolved by FirstChangeIs
	)
	cases := []struct {
		name    string
		op      string
		existed bool
		fails   int32
		applied bool
		err     error
		other   bool // another writer puts "other" after the first attempt
		want    string
		wantOK  bool
		wantErr bool
	}{
		{name: "put applied then unavailable", op: opPut, fails: 1, applied: true, want: "new"},
		{name: "put not applied, no leader twice", op: opPut, fails: 2, err: rpctypes.ErrNoLeader, want: "new"},
		{name: "put definite failure not retried", op: opPut, existed: true, fails: 1, err: rpctypes.ErrRequestTooLarge, want: "old", wantErr: true},
		{name: "put caller's deadline not retried", op: opPut, existed: true, fails: 1, err: context.DeadlineExceeded, want: "old", wantErr: true},
		{name: "delete applied then unavailable", op: opDelete, existed: true, fails: 1, applied: true, want: "<none>"},
		{name: "delete not applied, leader changed", op: opDelete, existed: true, fails: 1, err: rpctypes.ErrLeaderChanged, want: "<none>"},
		{name: "create applied then unavailable", op: opCreate, fails: 1, applied: true, want: "new", wantOK: true},
		{name: "create applied then three failures", op: opCreate, fails: 3, applied: true, want: "new", wantOK: true},
		{name: "create not applied, unavailable", op: opCreate, fails: 1, want: "new", wantOK: true},
		{name: "create not applied, another create first: a conflict", op: opCreate, fails: 1, other: true, want: "other"},
		{name: "create of a taken key without failures: a conflict", op: opCreate, existed: true, want: "old"},
		{name: "update applied then unavailable", op: opUpdate, existed: true, fails: 1, applied: true, want: "new", wantOK: true},
		{name: "update applied then overwritten: told by the history", op: opUpdate, existed: true, fails: 1, applied: true, other: true, want: "other", wantOK: true},
		{name: "update not applied, another write first: a conflict", op: opUpdate, existed: true, fails: 1, other: true, want: "other"},
		{name: "update not applied, timeout due to leader fail", op: opUpdate, existed: true, fails: 1, err: rpctypes.ErrTimeoutDueToLeaderFail, want: "new", wantOK: true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := "/txnretry/" + string(rune('a'+i))
			var rev int64
			if tc.existed {
				rev = put(key, "old")
			}
			f := &faultyKV{KV: c.KV, fails: tc.fails, applied: tc.applied, err: tc.err}
			if tc.other {
				f.between = func() { put(key, "other") }
			}
			w := &Writer{KV: f, Watcher: c.Watcher, Clock: clock.RealClock{}}
			var ok bool
			switch tc.op {
			case opPut:
				_, err = w.Put(ctx, key, "new")
			case opDelete:
				_, err = w.Delete(ctx, key)
			case opCreate:
				var resp *clientv3.TxnResponse
				resp, err = w.Txn(ctx, key, func(t clientv3.Txn) clientv3.Txn {
					return t.If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).Then(clientv3.OpPut(key, "new"))
				}, ValueIs(key, []byte("new"), 0))
				ok = err == nil && resp.Succeeded
			case opUpdate:
				var resp *clientv3.TxnResponse
				resp, err = w.Txn(ctx, key, func(t clientv3.Txn) clientv3.Txn {
					return t.If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).Then(clientv3.OpPut(key, "new"))
				}, FirstChangeIs(key, rev, []byte("new")))
				ok = err == nil && resp.Succeeded
				if ok && resp.Header.Revision <= rev {
					t.Errorf("revision %d, want past %d", resp.Header.Revision, rev)
				}
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if (tc.op == opCreate || tc.op == opUpdate) && ok != tc.wantOK {
				t.Errorf("succeeded = %v, want %v", ok, tc.wantOK)
			}
			if got := get(key); got != tc.want {
				t.Errorf("key holds %q, want %q", got, tc.want)
			}
		})
	}
}
