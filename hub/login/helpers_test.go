package login

import (
	"context"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	wetcd "github.com/wharfhub/wharf/hub/etcd"
)

// testEtcd starts a real embedded etcd for the test.
func testEtcd(t *testing.T) *clientv3.Client { return testEtcdB(t) }

func testEtcdB(t testing.TB) *clientv3.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e, err := wetcd.StartEmbedded(ctx, t.TempDir())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientURL}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(); e.Close(); cancel() })
	return c
}

func testKey(t *testing.T) []byte {
	t.Helper()
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}
