package replicas

import (
	"context"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
)

// leaderlessKV stands for an etcd member in a leader election: the next
// `fails` puts fail (applied or not, as the flag says).
type leaderlessKV struct {
	clientv3.KV
	applied bool
	fails   atomic.Int32
}

func (l *leaderlessKV) Put(ctx context.Context, k, v string, o ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	if l.fails.Add(-1) >= 0 {
		if l.applied {
			if _, err := l.KV.Put(ctx, k, v, o...); err != nil {
				return nil, err
			}
		}
		return nil, status.Error(codes.Unavailable, "etcdserver: no leader")
	}
	return l.KV.Put(ctx, k, v, o...)
}

// TestRegisterSurvivesLeaderLoss: a registration whose put fails during
// an etcd leader election still lands in that same round, once.
func TestRegisterSurvivesLeaderLoss(t *testing.T) {
	client := testserver.RunEtcd(t, nil).Client
	for _, applied := range []bool{false, true} {
		a := NewRegistry(client, "/registry", Replica{Name: "hub-a", InternalURL: "https://127.0.0.1:1"})
		kv := &leaderlessKV{KV: client.KV, applied: applied}
		kv.fails.Store(2)
		a.writes.KV = kv
		lease, _, err := a.register(t.Context())
		if err != nil {
			t.Fatalf("applied=%v: register = %v", applied, err)
		}
		resp, err := client.Get(t.Context(), "/registry/wharf.dev/replicas/hub-a")
		if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease != int64(lease) {
			t.Fatalf("applied=%v: registration = %+v, %v; want one on lease %x", applied, resp, err, lease)
		}
		if _, err := client.Revoke(context.WithoutCancel(t.Context()), lease); err != nil {
			t.Fatal(err)
		}
	}
}
