package replicas

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// LoadOrCreateSecret returns the secret every hub replica shares, creating
// 32 random bytes on the first start. Concurrent first starts agree: only
// one create transaction can win, and the others read its value.
func LoadOrCreateSecret(ctx context.Context, client *clientv3.Client, etcdPrefix string) ([]byte, error) {
	key := strings.TrimSuffix(etcdPrefix, "/") + "/wharf.dev/replicasecret"
	fresh := make([]byte, minSecret)
	if _, err := rand.Read(fresh); err != nil {
		return nil, fmt.Errorf("replicas: generating secret: %w", err)
	}
	resp, err := client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(fresh))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return nil, fmt.Errorf("replicas: loading shared secret: %w", err)
	}
	if resp.Succeeded {
		return fresh, nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 || len(kvs[0].Value) < minSecret {
		return nil, fmt.Errorf("replicas: shared secret %s is missing or too short", key)
	}
	return kvs[0].Value, nil
}
