package workspaces

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wharfhub/wharf/hub/cluster"
)

// scanPageSize bounds each keys-only range read of a purge scan.
const scanPageSize = 5000

// ClusterPrefixes returns every <prefix>/<group>/<resource>/<id>/ key range
// that holds objects of the given clusters. Finding ranges by scanning,
// rather than from a list of served resources, also catches custom
// resources whose CRD is gone and resources this binary does not know.
func ClusterPrefixes(ctx context.Context, c *clientv3.Client, etcdPrefix string, ids map[cluster.ID]bool) ([]string, error) {
	base := strings.TrimSuffix(etcdPrefix, "/") + "/"
	end := clientv3.GetPrefixRangeEnd(base)
	seen := map[string]bool{}
	var out []string
	for from := base; ; {
		resp, err := c.Get(ctx, from, clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(scanPageSize),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		if err != nil {
			return nil, fmt.Errorf("scanning keys: %w", err)
		}
		for _, kv := range resp.Kvs {
			// <group>/<resource>/<cluster>/[<ns>/]<name>
			segs := strings.SplitN(strings.TrimPrefix(string(kv.Key), base), "/", 4)
			if len(segs) < 4 || !ids[cluster.ID(segs[2])] {
				continue
			}
			p := base + segs[0] + "/" + segs[1] + "/" + segs[2] + "/"
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// PurgeClusters deletes every object stored for the given clusters and
// returns how many keys it removed.
func PurgeClusters(ctx context.Context, c *clientv3.Client, etcdPrefix string, ids map[cluster.ID]bool) (int64, error) {
	prefixes, err := ClusterPrefixes(ctx, c, etcdPrefix, ids)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, p := range prefixes {
		resp, err := c.Delete(ctx, p, clientv3.WithPrefix())
		if err != nil {
			return n, fmt.Errorf("deleting %s: %w", p, err)
		}
		n += resp.Deleted
	}
	return n, nil
}
