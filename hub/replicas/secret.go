package replicas

import (
	"context"
	"crypto/rand"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wharfhub/wharf/hub/bootstrap"
)

// LoadOrCreateSecret returns the secret every hub replica shares for the
// forwarding hop, creating 32 random bytes on the first start (a hub-wide
// bootstrap.SharedSecret, so concurrent first starts agree). The length
// is checked where it is used (NewAsserter).
func LoadOrCreateSecret(ctx context.Context, client *clientv3.Client, etcdPrefix string) ([]byte, error) {
	return bootstrap.SharedSecret(ctx, client, etcdPrefix, "replica-hop", func() ([]byte, error) {
		b := make([]byte, minSecret)
		_, err := rand.Read(b)
		return b, err
	})
}
