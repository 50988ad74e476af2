package workspaces

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
)

// Run keeps the in-memory copy current until ctx is done: a full read, then
// a watch from the read's revision, starting over whenever the watch breaks
// (compaction, etcd restart).
func (x *Index) Run(ctx context.Context) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := x.syncOnce(ctx); err != nil && ctx.Err() == nil {
			klog.ErrorS(err, "Workspace index watch ended; relisting")
		}
	}, time.Second)
}

func (x *Index) syncOnce(ctx context.Context) error {
	resp, err := x.client.Get(ctx, x.clustersKey, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	byID := map[cluster.ID]record{}
	byPath := map[cluster.Path]cluster.ID{}
	revs := map[cluster.ID]int64{}
	for _, kv := range resp.Kvs {
		if id, rec, ok := x.decode(kv.Key, kv.Value); ok {
			byID[id], byPath[rec.Path], revs[id] = rec, id, kv.ModRevision
		}
	}
	x.mu.Lock()
	x.byID, x.byPath, x.revs, x.synced = byID, byPath, revs, true
	x.mu.Unlock()

	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range x.client.Watch(wctx, x.clustersKey, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1), clientv3.WithPrevKV()) {
		if err := wr.Err(); err != nil {
			return err
		}
		for _, ev := range wr.Events {
			switch ev.Type {
			case clientv3.EventTypePut:
				if id, rec, ok := x.decode(ev.Kv.Key, ev.Kv.Value); ok {
					x.remember(id, rec, ev.Kv.ModRevision)
				}
			case clientv3.EventTypeDelete:
				if ev.PrevKv != nil {
					if id, rec, ok := x.decode(ev.PrevKv.Key, ev.PrevKv.Value); ok {
						x.forget(id, rec.Path, ev.Kv.ModRevision)
					}
				}
			}
		}
	}
	return ctx.Err()
}

func (x *Index) decode(key, value []byte) (cluster.ID, record, bool) {
	var rec record
	if err := json.Unmarshal(value, &rec); err != nil {
		klog.ErrorS(err, "Ignoring undecodable workspace record", "key", string(key))
		return "", record{}, false
	}
	return cluster.ID(strings.TrimPrefix(string(key), x.clustersKey)), rec, true
}
