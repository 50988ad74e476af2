package edgesbench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Write classes of WriteCounter.
const (
	// ClassEdges: the Edge objects themselves.
	ClassEdges = "edge objects"
	// ClassWorkspace: any other key of the edges' workspace (Leases,
	// Events, Secrets the provider may keep there).
	ClassWorkspace = "other keys in the edges' workspace"
	// ClassHub: everything else (the hub's own leases, the catalog, other
	// workspaces).
	ClassHub = "elsewhere (hub's own keys)"
)

// Classify names the class of an etcd key written by the hub. The hub's
// storage puts the logical cluster into every key,
// /registry/<group>/<resource>/<cluster>/..., so cluster tells the edges'
// workspace apart; Edge keys name the edges.wharf.dev group.
func Classify(key, cluster string) string {
	switch {
	case strings.Contains(key, "/edges.wharf.dev/"):
		return ClassEdges
	case cluster != "" && strings.Contains(key, "/"+cluster+"/"):
		return ClassWorkspace
	default:
		return ClassHub
	}
}

// WriteCounter counts the writes (puts and deletes) to an etcd, by class,
// with one watch on every key from the revision it starts at.
type WriteCounter struct {
	cli     *clientv3.Client
	cluster string
	cancel  context.CancelFunc
	done    chan struct{}

	mu     sync.Mutex
	counts map[string]int
	keys   map[string]int // writes per key, for the report's top writers
	err    error
}

// WatchWrites connects to endpoint (for the hub's embedded etcd,
// unix://<data-dir>/etcd/etcd.sock) and counts writes until Stop.
// cluster is the edges' workspace's logical cluster id (see Classify).
func WatchWrites(ctx context.Context, endpoint, cluster string) (*WriteCounter, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("etcd client %s: %w", endpoint, err)
	}
	// Start from the current revision, so only writes made from now count.
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	resp, err := cli.Get(sctx, "/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	scancel()
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcd revision: %w", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &WriteCounter{cli: cli, cluster: cluster, cancel: cancel, done: make(chan struct{}), counts: map[string]int{}, keys: map[string]int{}}
	ch := cli.Watch(clientv3.WithRequireLeader(wctx), "/", clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	go w.run(wctx, ch)
	return w, nil
}

func (w *WriteCounter) run(ctx context.Context, ch clientv3.WatchChan) {
	defer close(w.done)
	for r := range ch {
		if err := r.Err(); err != nil {
			if ctx.Err() == nil {
				w.mu.Lock()
				w.err = fmt.Errorf("etcd watch: %w", err)
				w.mu.Unlock()
			}
			return
		}
		w.mu.Lock()
		for _, ev := range r.Events {
			k := string(ev.Kv.Key)
			w.counts[Classify(k, w.cluster)]++
			w.keys[k]++
		}
		w.mu.Unlock()
	}
}

// Snapshot returns the counts so far by class, and the watch's error if it
// failed (the counts are then a lower bound).
func (w *WriteCounter) Snapshot() (map[string]int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.counts))
	for k, v := range w.counts {
		out[k] = v
	}
	return out, w.err
}

// TopKeys returns up to n of the most written keys with their counts.
func (w *WriteCounter) TopKeys(n int) []KeyCount {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]KeyCount, 0, len(w.keys))
	for k, v := range w.keys {
		out = append(out, KeyCount{Key: k, N: v})
	}
	sortKeyCounts(out)
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// Stop ends the watch and closes the client.
func (w *WriteCounter) Stop() {
	w.cancel()
	<-w.done
	w.cli.Close()
}
