package storage

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// scanPageSize bounds each keys-only range read of a purge scan.
const scanPageSize = 5000

// KeyParts is a stored key split into its segments:
// <group>/<resource>/<cluster>/<rest>, where rest is "<name>" for
// cluster-scoped objects and "<namespace>/<name>" for namespaced ones.
type KeyParts struct {
	Group, Resource, Cluster, Rest string
}

// RangeMatcher decides which key ranges a purge removes. Given a key, it
// returns the range prefix (relative to <group>/<resource>/) that holds the
// key and every sibling to delete with it, or false to keep the key.
type RangeMatcher func(k KeyParts) (string, bool)

// PurgeRanges scans every key under etcdPrefix and deletes the ranges the
// matcher selects, returning how many keys it removed. Finding ranges by
// scanning, rather than from a list of served resources, also catches custom
// resources whose CRD is gone and resources this binary does not know.
func PurgeRanges(ctx context.Context, c *clientv3.Client, etcdPrefix string, match RangeMatcher) (int64, error) {
	base := strings.TrimSuffix(etcdPrefix, "/") + "/"
	end := clientv3.GetPrefixRangeEnd(base)
	seen := map[string]bool{}
	var ranges []string
	for from := base; ; {
		resp, err := c.Get(ctx, from, clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(scanPageSize),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		if err != nil {
			return 0, fmt.Errorf("scanning keys: %w", err)
		}
		for _, kv := range resp.Kvs {
			segs := strings.SplitN(strings.TrimPrefix(string(kv.Key), base), "/", 4)
			if len(segs) < 4 {
				continue
			}
			if r, ok := match(KeyParts{Group: segs[0], Resource: segs[1], Cluster: segs[2], Rest: segs[3]}); ok {
				p := base + segs[0] + "/" + segs[1] + "/" + r
				if !seen[p] {
					seen[p] = true
					ranges = append(ranges, p)
				}
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	var n int64
	for _, p := range ranges {
		resp, err := c.Delete(ctx, p, clientv3.WithPrefix())
		if err != nil {
			return n, fmt.Errorf("deleting %s: %w", p, err)
		}
		n += resp.Deleted
	}
	return n, nil
}
