package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"path"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wharfhub/wharf/hub/etcd"
)

// SharedSecret returns the hub-wide secret called name, creating it with
// generate on first use. Every hub replica sharing the etcd gets the same
// bytes: the first writer wins a create-if-absent transaction and the
// others read its value. This is what lets a token signed or a cookie
// sealed by one replica be verified by another.
//
// The value is stored under <prefix>/wharf.dev/secrets/<name> without the
// encryption-at-rest that Secrets get, so etcd access must be guarded as
// the hub's own credentials are. Rotation means deleting the key while the
// hubs are stopped.
func SharedSecret(ctx context.Context, c *clientv3.Client, prefix, name string, generate func() ([]byte, error)) ([]byte, error) {
	return sharedSecret(ctx, c, etcd.NewWriter(c), prefix, name, generate)
}

// sharedSecret is SharedSecret writing through w (tests inject failures).
func sharedSecret(ctx context.Context, c *clientv3.Client, w *etcd.Writer, prefix, name string, generate func() ([]byte, error)) ([]byte, error) {
	key := path.Join(prefix, "wharf.dev", "secrets", name)
	if got, err := getSecret(ctx, c, key); err != nil || got != nil {
		return got, err
	}
	val, err := generate()
	if err != nil {
		return nil, fmt.Errorf("generating shared secret %s: %w", name, err)
	}
	if len(val) == 0 {
		return nil, errors.New("generated shared secret is empty")
	}
	// Retried across an etcd member or leader failure, so that a replica
	// starting then does not fail. No resolver is needed: a retry that
	// finds the key taken reads it in the Else branch, and that is the
	// value to use whether our own first attempt or another replica's
	// wrote it.
	resp, err := w.Txn(ctx, key, func(t clientv3.Txn) clientv3.Txn {
		return t.If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, string(val))).
			Else(clientv3.OpGet(key))
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("storing shared secret %s: %w", name, err)
	}
	if resp.Succeeded {
		return val, nil
	}
	// Another replica created it between our read and our write.
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) != 1 || len(kvs[0].Value) == 0 {
		return nil, fmt.Errorf("shared secret %s: lost the create race but found no value", name)
	}
	return kvs[0].Value, nil
}

func getSecret(ctx context.Context, c *clientv3.Client, key string) ([]byte, error) {
	resp, err := c.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("reading shared secret: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	if len(resp.Kvs[0].Value) == 0 {
		return nil, fmt.Errorf("shared secret %s is empty in etcd", key)
	}
	return resp.Kvs[0].Value, nil
}
