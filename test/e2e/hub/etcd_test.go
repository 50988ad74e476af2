package hub

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	wetcd "github.com/wharfhub/wharf/hub/etcd"
)

// externalEtcd runs a real etcd member (the upstream embed package) in the
// test process; hubs connect to it through its unix socket like to any
// external etcd.
func externalEtcd(t *testing.T) (*clientv3.Client, []string) {
	t.Helper()
	e, err := wetcd.StartEmbedded(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientURL}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, []string{e.ClientURL}
}

// keysContaining lists every etcd key that mentions any of the needles.
func keysContaining(t *testing.T, c *clientv3.Client, needles ...string) []string {
	t.Helper()
	resp, err := c.Get(context.Background(), "", clientv3.WithFromKey(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		for _, n := range needles {
			if strings.Contains(string(kv.Key), n) {
				out = append(out, string(kv.Key))
				break
			}
		}
	}
	return out
}

func keysWithPrefix(t *testing.T, c *clientv3.Client, prefix string) []string {
	t.Helper()
	resp, err := c.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, string(kv.Key))
	}
	return out
}
