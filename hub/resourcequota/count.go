package resourcequota

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/wharfhub/wharf/hub/cluster"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// Counter counts stored objects from their etcd keys, one range count per
// resource: <prefix>/<group>/<resource>/<cluster>/<namespace>/<name>.
// Objects of every kind, custom resources included, are counted alike,
// and only under the given workspace's keys.
type Counter struct {
	Client *clientv3.Client
	// Prefix is the storage prefix (normally /registry).
	Prefix string
}

// namespaceKey is the key prefix of gr's objects in one namespace.
func (c *Counter) namespaceKey(id cluster.ID, namespace string, gr schema.GroupResource) string {
	return strings.TrimSuffix(c.Prefix, "/") + wstorage.ResourcePrefix(gr.Group, gr.Resource) + "/" + string(id) + "/" + namespace + "/"
}

// Count is the number of gr's objects stored in the namespace.
func (c *Counter) Count(ctx context.Context, id cluster.ID, namespace string, gr schema.GroupResource) (int64, error) {
	if id == "" || strings.Contains(string(id), "/") || namespace == "" || strings.Contains(namespace, "/") {
		return 0, fmt.Errorf("invalid workspace %q or namespace %q", id, namespace)
	}
	resp, err := c.Client.Get(ctx, c.namespaceKey(id, namespace, gr), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("counting %s in %s/%s: %w", gr, id, namespace, err)
	}
	return resp.Count, nil
}
