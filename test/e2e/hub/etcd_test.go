package hub

import (
	"context"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
)

// externalEtcd runs a real etcd member (the upstream embed package) in the
// test process; hubs connect to it over loopback like to any external etcd.
func externalEtcd(t *testing.T) (*clientv3.Client, []string) {
	t.Helper()
	c := testserver.RunEtcd(t, nil)
	return c.Client, c.Endpoints()
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
