package etcd

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"k8s.io/utils/clock"
)

// faulty stands for a member that dies around a write: for the first
// `fails` calls it either applies the write on the real etcd and then
// reports Unavailable (applied=true), or reports it without applying.
// between runs after the first attempt (another writer).
type faulty struct {
	kubernetes.Interface
	fails   int32
	applied bool
	err     error
	between func()
	calls   atomic.Int32
}

func (f *faulty) fail() (int32, bool, error) {
	n := f.calls.Add(1)
	if n > f.fails {
		return n, false, nil
	}
	err := f.err
	if err == nil {
		err = status.Error(codes.Unavailable, "connection reset by peer")
	}
	return n, true, err
}

func (f *faulty) OptimisticPut(ctx context.Context, key string, value []byte, rev int64, o kubernetes.PutOptions) (kubernetes.PutResponse, error) {
	if n, failing, err := f.fail(); failing {
		if f.applied {
			if _, aerr := f.Interface.OptimisticPut(ctx, key, value, rev, o); aerr != nil {
				return kubernetes.PutResponse{}, aerr
			}
		}
		if f.between != nil && n == 1 {
			f.between()
		}
		return kubernetes.PutResponse{}, err
	}
	return f.Interface.OptimisticPut(ctx, key, value, rev, o)
}

func (f *faulty) OptimisticDelete(ctx context.Context, key string, rev int64, o kubernetes.DeleteOptions) (kubernetes.DeleteResponse, error) {
	if n, failing, err := f.fail(); failing {
		if f.applied {
			if _, aerr := f.Interface.OptimisticDelete(ctx, key, rev, o); aerr != nil {
				return kubernetes.DeleteResponse{}, aerr
			}
		}
		if f.between != nil && n == 1 {
			f.between()
		}
		return kubernetes.DeleteResponse{}, err
	}
	return f.Interface.OptimisticDelete(ctx, key, rev, o)
}

func TestRetryingKV(t *testing.T) {
	ctx := context.Background()
	e, err := StartEmbedded(ctx, filepath.Join(t.TempDir(), "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	kc, err := kubernetes.New(clientv3.Config{Endpoints: []string{e.ClientURL}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	put := func(key, val string) int64 {
		resp, err := kc.Put(ctx, key, val)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}

	cases := []struct {
		name    string
		del     bool
		existed bool // the key exists at expectedRevision
		fails   int32
		applied bool
		err     error
		other   bool // another writer changes the key after the applied attempt
		want    string
		wantOK  bool
		wantErr bool
	}{
		{name: "create applied then unavailable", fails: 1, applied: true, want: "new", wantOK: true},
		{name: "update applied then unavailable", existed: true, fails: 1, applied: true, want: "new", wantOK: true},
		{name: "update applied then two failures", existed: true, fails: 3, applied: true, want: "new", wantOK: true},
		{name: "update not applied, unavailable", existed: true, fails: 1, want: "new", wantOK: true},
		{name: "update not applied, leader changed", existed: true, fails: 1, err: rpctypes.ErrLeaderChanged, want: "new", wantOK: true},
		{name: "update not applied, no leader", existed: true, fails: 2, err: rpctypes.ErrNoLeader, want: "new", wantOK: true},
		{name: "update applied then overwritten: told by the history", existed: true, fails: 1, applied: true, other: true, want: "other", wantOK: true},
		{name: "update not applied, another write first: a conflict", existed: true, fails: 1, other: true, want: "other"},
		{name: "create applied then overwritten: undecidable", fails: 1, applied: true, other: true, want: "other", wantErr: true},
		{name: "create not applied, another create first: undecidable", fails: 1, other: true, want: "other", wantErr: true},
		{name: "definite failure is not retried", existed: true, fails: 1, err: rpctypes.ErrRequestTooLarge, want: "old", wantErr: true},
		{name: "delete applied then unavailable", del: true, existed: true, fails: 1, applied: true, wantOK: true},
		{name: "delete not applied, unavailable", del: true, existed: true, fails: 2, wantOK: true},
		{name: "delete applied, key recreated: told by the history", del: true, existed: true, fails: 1, applied: true, other: true, want: "other", wantOK: true},
		{name: "delete not applied, another write first: a conflict", del: true, existed: true, fails: 1, other: true, want: "other"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := "/retry/" + string(rune('a'+i))
			var rev int64
			if tc.existed {
				rev = put(key, "old")
			}
			f := &faulty{Interface: kc.Kubernetes, fails: tc.fails, applied: tc.applied, err: tc.err}
			if tc.other {
				f.between = func() { put(key, "other") }
			}
			r := &RetryingKV{Interface: f, KV: kc.KV, Watcher: kc.Watcher, Clock: clock.RealClock{}}
			var ok bool
			var gotRev int64
			if tc.del {
				var resp kubernetes.DeleteResponse
				resp, err = r.OptimisticDelete(ctx, key, rev, kubernetes.DeleteOptions{})
				ok, gotRev = resp.Succeeded, resp.Revision
			} else {
				var resp kubernetes.PutResponse
				resp, err = r.OptimisticPut(ctx, key, []byte("new"), rev, kubernetes.PutOptions{})
				ok, gotRev = resp.Succeeded, resp.Revision
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr && tc.err == nil && !Retriable(err) {
				t.Errorf("err = %v, want the original (retriable) error", err)
			}
			if ok != tc.wantOK {
				t.Errorf("succeeded = %v, want %v", ok, tc.wantOK)
			}
			got, err := kc.KV.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			var val string
			var modRev int64
			if len(got.Kvs) == 1 {
				val, modRev = string(got.Kvs[0].Value), got.Kvs[0].ModRevision
			}
			if val != tc.want {
				t.Errorf("stored %q, want %q", val, tc.want)
			}
			// The store takes the write's revision as the object's new
			// resourceVersion: it must be the key's mod revision (for a
			// delete, the revision of the delete, which is past rev).
			if tc.wantOK && !tc.del && !tc.other && gotRev != modRev {
				t.Errorf("revision %d, want the key's mod revision %d", gotRev, modRev)
			}
			// Overwritten since: the revision of our write, between.
			if tc.wantOK && !tc.del && tc.other && (gotRev <= rev || gotRev >= modRev) {
				t.Errorf("revision %d, want between %d and the overwrite at %d", gotRev, rev, modRev)
			}
			if tc.wantOK && tc.del && gotRev <= rev {
				t.Errorf("delete revision %d, want > %d", gotRev, rev)
			}
		})
	}
}

// Retries stop when the budget is spent, with the last error.
func TestRetryingKVBudget(t *testing.T) {
	f := &faulty{Interface: kubernetes.Interface(nil), fails: 1 << 30}
	r := &RetryingKV{Interface: f, Clock: clock.RealClock{}, Budget: 300 * time.Millisecond}
	_, err := r.OptimisticPut(context.Background(), "/k", []byte("v"), 0, kubernetes.PutOptions{})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("err = %v, want Unavailable", err)
	}
	if f.calls.Load() < 2 {
		t.Errorf("%d attempts, want retries", f.calls.Load())
	}
}

func TestRetriable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{status.Error(codes.Unavailable, "x"), true},
		{rpctypes.ErrLeaderChanged, true},
		{rpctypes.ErrNoLeader, true},
		{rpctypes.ErrTimeoutDueToLeaderFail, true},
		{rpctypes.ErrStopped, true},
		{rpctypes.ErrRequestTooLarge, false},
		{rpctypes.ErrPermissionDenied, false},
		{context.DeadlineExceeded, false},
		{errors.New("other"), false},
		{nil, false},
	} {
		if got := Retriable(tc.err); got != tc.want {
			t.Errorf("Retriable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// stalled stands for a leader that died under a proposal: the first
// attempt fails as the member's connection resets, the second never
// returns (etcd would answer only after its own request timeout), and is
// applied late, after it was cut, when appliedLate. Later attempts go
// through.
type stalled struct {
	kubernetes.Interface
	appliedLate bool
	calls       atomic.Int32
	// requireLeader records, per call, whether the call required a leader.
	requireLeader []bool
}

func (s *stalled) OptimisticPut(ctx context.Context, key string, value []byte, rev int64, o kubernetes.PutOptions) (kubernetes.PutResponse, error) {
	md, _ := metadata.FromOutgoingContext(ctx)
	s.requireLeader = append(s.requireLeader, len(md.Get(rpctypes.MetadataRequireLeaderKey)) > 0)
	switch s.calls.Add(1) {
	case 1:
		return kubernetes.PutResponse{}, status.Error(codes.Unavailable, "error reading from server: EOF")
	case 2:
		<-ctx.Done()
		if s.appliedLate {
			if _, err := s.Interface.OptimisticPut(context.Background(), key, value, rev, o); err != nil {
				return kubernetes.PutResponse{}, err
			}
		}
		return kubernetes.PutResponse{}, status.FromContextError(ctx.Err()).Err()
	}
	return s.Interface.OptimisticPut(ctx, key, value, rev, o)
}

// A retry that hangs is cut and retried; whether or not the cut attempt
// was applied after all, the write succeeds once, at the key's revision.
func TestRetryingKVAttemptTimeout(t *testing.T) {
	ctx := context.Background()
	e, err := StartEmbedded(ctx, filepath.Join(t.TempDir(), "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	kc, err := kubernetes.New(clientv3.Config{Endpoints: []string{e.ClientURL}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	for _, tc := range []struct {
		name        string
		existed     bool
		appliedLate bool
	}{
		{name: "create, cut attempt not applied"},
		{name: "create, cut attempt applied late", appliedLate: true},
		{name: "update, cut attempt not applied", existed: true},
		{name: "update, cut attempt applied late", existed: true, appliedLate: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "/stalled/" + tc.name
			var rev int64
			if tc.existed {
				resp, err := kc.KV.Put(ctx, key, "old")
				if err != nil {
					t.Fatal(err)
				}
				rev = resp.Header.Revision
			}
			s := &stalled{Interface: kc.Kubernetes, appliedLate: tc.appliedLate}
			r := &RetryingKV{Interface: s, KV: kc.KV, Watcher: kc.Watcher, Clock: clock.RealClock{},
				AttemptTimeout: 200 * time.Millisecond}
			resp, err := r.OptimisticPut(ctx, key, []byte("new"), rev, kubernetes.PutOptions{})
			if err != nil || !resp.Succeeded {
				t.Fatalf("put: %+v, %v; want success", resp, err)
			}
			if n := s.calls.Load(); n != 3 {
				t.Errorf("%d attempts, want 3 (failed, cut, through)", n)
			}
			if want := []bool{false, true, true}; !slices.Equal(s.requireLeader, want) {
				t.Errorf("attempts required a leader: %v, want %v (retries only)", s.requireLeader, want)
			}
			got, err := kc.KV.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "new" || got.Kvs[0].ModRevision != resp.Revision {
				t.Errorf("stored %v, want \"new\" at revision %d", got.Kvs, resp.Revision)
			}
			if got.Kvs[0].Version != map[bool]int64{false: 1, true: 2}[tc.existed] {
				t.Errorf("key version %d: the write was applied more than once", got.Kvs[0].Version)
			}
		})
	}
}
