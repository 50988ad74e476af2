package storage

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// PurgeRanges deletes, for every resource stored under etcdPrefix, the key
// ranges that ranges returns for it, and reports how many keys went.
//
// ranges receives a resource's <group> and <resource> segments and returns
// sub-prefixes below <etcdPrefix>/<group>/<resource>/, such as "<cluster>/"
// (a whole workspace) or "<cluster>/<namespace>/" (one namespace). Keys
// are partitioned by resource first, so the cluster is never a key prefix;
// the resources are therefore discovered from etcd itself rather than from
// the served API, which also catches custom resources whose CRD is gone.
// Discovery reads one key per resource (a skip scan), not every key.
func PurgeRanges(ctx context.Context, c *clientv3.Client, etcdPrefix string, ranges func(group, resource string) []string) (int64, error) {
	resources, err := storedResources(ctx, c, etcdPrefix)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, gr := range resources {
		for _, r := range ranges(gr[0], gr[1]) {
			p := strings.TrimSuffix(etcdPrefix, "/") + "/" + gr[0] + "/" + gr[1] + "/" + r
			// Most ranges are empty (a workspace stores a few of the
			// hub's resources): a count is a read, a delete is a raft
			// write with its fsync even when it deletes nothing, and
			// each workspace deletion purged every resource twice, and
			// each of its namespaces too: some hundreds of writes that
			// everybody's writes queued behind (review 5, #24). A key
			// written after the count is as late as one written after
			// the delete: the callers purge twice for those.
			cnt, err := c.Get(ctx, p, clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				return n, fmt.Errorf("counting %s: %w", p, err)
			}
			if cnt.Count == 0 {
				continue
			}
			resp, err := c.Delete(ctx, p, clientv3.WithPrefix())
			if err != nil {
				return n, fmt.Errorf("deleting %s: %w", p, err)
			}
			n += resp.Deleted
		}
	}
	return n, nil
}

// storedResources lists the <group>/<resource> pairs that have keys under
// etcdPrefix, reading the first key of each and then jumping past the
// resource's whole range.
func storedResources(ctx context.Context, c *clientv3.Client, etcdPrefix string) ([][2]string, error) {
	base := strings.TrimSuffix(etcdPrefix, "/") + "/"
	end := clientv3.GetPrefixRangeEnd(base)
	var out [][2]string
	for from := base; from < end; {
		resp, err := c.Get(ctx, from, clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(1))
		if err != nil {
			return nil, fmt.Errorf("scanning stored resources: %w", err)
		}
		if len(resp.Kvs) == 0 {
			break
		}
		key := strings.TrimPrefix(string(resp.Kvs[0].Key), base)
		segs := strings.SplitN(key, "/", 3)
		if len(segs) < 3 {
			// A key directly under <group>/ (none are written): step past it.
			from = string(resp.Kvs[0].Key) + "\x00"
			continue
		}
		out = append(out, [2]string{segs[0], segs[1]})
		from = clientv3.GetPrefixRangeEnd(base + segs[0] + "/" + segs[1] + "/")
	}
	return out, nil
}
