package workspaces

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/etcd"
)

// ErrNotFound is returned when a path or id names no workspace.
var ErrNotFound = fmt.Errorf("workspace not found")

// ErrExists is returned when allocating a path that is already taken.
var ErrExists = fmt.Errorf("workspace path already exists")

// record is the etcd value of a logical cluster.
type record struct {
	Path        cluster.Path `json:"path"`
	Terminating bool         `json:"terminating,omitempty"`
	// Allocated lets the orphan collector leave in-flight creations alone.
	Allocated time.Time `json:"allocated,omitempty"`
}

// Info is what a lookup returns about a workspace.
type Info struct {
	ID          cluster.ID
	Path        cluster.Path
	Terminating bool
}

// Index maps workspace paths to logical cluster ids and back.
type Index struct {
	client *clientv3.Client
	// writes retries the index's writes across an etcd member or leader
	// failure, so that a workspace create or delete does not fail then.
	writes      *etcd.Writer
	clustersKey string // <prefix>/wharf.dev/logicalclusters/
	pathsKey    string // <prefix>/wharf.dev/workspacepaths/

	mu     sync.RWMutex // guards the fields below
	byID   map[cluster.ID]record
	byPath map[cluster.Path]cluster.ID
	// revs holds the etcd revision of the newest change applied per id,
	// deletions included, so that a watch event older than a local write
	// cannot undo it.
	revs   map[cluster.ID]int64
	synced bool

	// misses answers recent misses from memory (misses.go).
	misses *misses
}

// NewIndex returns an index stored under etcdPrefix (normally /registry).
func NewIndex(client *clientv3.Client, etcdPrefix string) *Index {
	p := strings.TrimSuffix(etcdPrefix, "/") + "/wharf.dev/"
	var writes *etcd.Writer
	if client != nil { // tests of the in-memory half pass none
		writes = etcd.NewWriter(client)
	}
	return &Index{
		client:      client,
		writes:      writes,
		clustersKey: p + "logicalclusters/",
		pathsKey:    p + "workspacepaths/",
		byID:        map[cluster.ID]record{},
		byPath:      map[cluster.Path]cluster.ID{},
		revs:        map[cluster.ID]int64{},
		misses:      newMisses(clock.RealClock{}),
	}
}

// WithClock sets the clock that ages remembered misses (tests).
func (x *Index) WithClock(c clock.PassiveClock) *Index {
	x.misses = newMisses(c)
	return x
}

// EnsureRoot returns the id of the root workspace, allocating it on the
// very first start. Concurrent first starts of several replicas agree,
// because only one allocation transaction can win.
func (x *Index) EnsureRoot(ctx context.Context) (cluster.ID, error) {
	for i := 0; i < 3; i++ {
		id, err := x.lookupPath(ctx, cluster.RootPath)
		if err == nil {
			return id, nil
		}
		if err != ErrNotFound {
			return "", err
		}
		id, err = x.Allocate(ctx, cluster.RootPath)
		if err == nil {
			klog.InfoS("Allocated root workspace", "cluster", id)
			return id, nil
		}
		if err != ErrExists {
			return "", err
		}
	}
	return "", fmt.Errorf("could not allocate or read the root workspace")
}

// Allocate records a new id for path. It fails with ErrExists if the path is
// taken.
func (x *Index) Allocate(ctx context.Context, path cluster.Path) (cluster.ID, error) {
	id, err := cluster.NewID()
	if err != nil {
		return "", err
	}
	now := time.Now().UTC().Truncate(time.Second)
	rec, err := json.Marshal(record{Path: path, Allocated: now})
	if err != nil {
		return "", err
	}
	pk, ck := x.pathsKey+string(path), x.clustersKey+string(id)
	// A retry after an ambiguous failure finds the path taken if the first
	// attempt applied: the path then maps to this id, fresh and random, so
	// that tells it apart from a real conflict.
	resp, err := x.writes.Txn(ctx, pk, func(t clientv3.Txn) clientv3.Txn {
		return t.If(clientv3.Compare(clientv3.CreateRevision(pk), "=", 0), clientv3.Compare(clientv3.CreateRevision(ck), "=", 0)).
			Then(clientv3.OpPut(pk, string(id)), clientv3.OpPut(ck, string(rec)))
	}, etcd.ValueIs(pk, []byte(id), 0))
	if err != nil {
		return "", fmt.Errorf("allocating workspace %s: %w", path, err)
	}
	if !resp.Succeeded {
		return "", ErrExists
	}
	x.remember(id, record{Path: path, Allocated: now}, resp.Header.Revision)
	return id, nil
}

// MarkTerminating records that a workspace is being deleted, so that every
// replica refuses new objects in it while its keys are removed.
func (x *Index) MarkTerminating(ctx context.Context, id cluster.ID, path cluster.Path) error {
	if info, ok := x.Cached(string(id)); ok && info.Terminating {
		// Marked already (a record stays terminating until released): a
		// held deletion is looked at again and again, and each look wrote
		// the same record to etcd, an fsync the other tenants' writes
		// queued behind (issue 24, B4).
		return nil
	}
	rec, err := json.Marshal(record{Path: path, Terminating: true})
	if err != nil {
		return err
	}
	ck := x.clustersKey + string(id)
	// Re-sending is harmless: once applied, the compare still holds and
	// the same record is written again.
	resp, err := x.writes.Txn(ctx, ck, func(t clientv3.Txn) clientv3.Txn {
		return t.If(clientv3.Compare(clientv3.CreateRevision(ck), ">", 0)).Then(clientv3.OpPut(ck, string(rec)))
	}, nil)
	if err != nil {
		return fmt.Errorf("marking workspace %s terminating: %w", path, err)
	}
	if resp.Succeeded {
		x.remember(id, record{Path: path, Terminating: true}, resp.Header.Revision)
	}
	return nil
}

// Release forgets the mapping of id and path.
func (x *Index) Release(ctx context.Context, id cluster.ID, path cluster.Path) error {
	// Deletes without a compare: re-sending is harmless.
	resp, err := x.writes.Txn(ctx, x.pathsKey+string(path), func(t clientv3.Txn) clientv3.Txn {
		return t.Then(clientv3.OpDelete(x.pathsKey+string(path)), clientv3.OpDelete(x.clustersKey+string(id)))
	}, nil)
	if err != nil {
		return fmt.Errorf("releasing workspace %s: %w", path, err)
	}
	x.forget(id, path, resp.Header.Revision)
	return nil
}

// Cached resolves a /clusters/<raw> segment from memory only.
func (x *Index) Cached(raw string) (Info, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	id := cluster.ID(raw)
	if !cluster.IsValidID(raw) {
		var ok bool
		if id, ok = x.byPath[cluster.Path(raw)]; !ok {
			return Info{}, false
		}
	}
	rec, ok := x.byID[id]
	return Info{ID: id, Path: rec.Path, Terminating: rec.Terminating}, ok
}

// Resolve turns a /clusters/<raw> segment, a path or an id, into the
// workspace's Info, reading etcd when memory misses. A segment etcd named
// no workspace for is answered ErrNotFound from memory, checked again in
// the background once the answer is older than MissTTL, and concurrent
// first misses share one read (misses.go): resolving a missing workspace
// must cost what resolving an existing one does.
func (x *Index) Resolve(ctx context.Context, raw string) (Info, error) {
	x.Asked(ctx, raw)
	if info, ok := x.Cached(raw); ok {
		return info, nil
	}
	if hit, refresh := x.misses.lookup(raw); hit {
		if refresh {
			x.misses.refresh(raw, x.resolveStored)
		}
		return Info{}, ErrNotFound
	}
	return x.misses.resolve(ctx, raw, x.resolveStored)
}

// ResolveStored is Resolve without the remembered misses: a miss in memory
// is read from etcd again. It is for the hub's own callers that know the
// workspace was just stored, possibly by another replica (a create that
// lost the index transaction with AlreadyExists): Resolve could answer
// them a miss remembered a moment before that creation.
func (x *Index) ResolveStored(ctx context.Context, raw string) (Info, error) {
	if info, ok := x.Cached(raw); ok {
		return info, nil
	}
	info, err := x.resolveStored(ctx, raw)
	x.misses.settle(raw, err)
	return info, err
}

// resolveStored reads raw's records from etcd.
func (x *Index) resolveStored(ctx context.Context, raw string) (Info, error) {
	id := cluster.ID(raw)
	if !cluster.IsValidID(raw) {
		path, err := cluster.ParsePath(raw)
		if err != nil {
			return Info{}, ErrNotFound
		}
		if id, err = x.lookupPath(ctx, path); err != nil {
			return Info{}, err
		}
	}
	rec, err := x.read(ctx, id)
	if err != nil {
		return Info{}, err
	}
	return Info{ID: id, Path: rec.Path, Terminating: rec.Terminating}, nil
}

// PathOf returns the path of a logical cluster.
func (x *Index) PathOf(ctx context.Context, id cluster.ID) (cluster.Path, error) {
	info, err := x.Resolve(ctx, string(id))
	return info.Path, err
}

func (x *Index) read(ctx context.Context, id cluster.ID) (record, error) {
	indexReads.Inc()
	resp, err := x.client.Get(ctx, x.clustersKey+string(id))
	if err != nil {
		return record{}, fmt.Errorf("reading workspace %s: %w", id, err)
	}
	if len(resp.Kvs) == 0 {
		return record{}, ErrNotFound
	}
	var rec record
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		return record{}, fmt.Errorf("decoding workspace %s: %w", id, err)
	}
	return rec, nil
}

func (x *Index) lookupPath(ctx context.Context, path cluster.Path) (cluster.ID, error) {
	indexReads.Inc()
	resp, err := x.client.Get(ctx, x.pathsKey+string(path))
	if err != nil {
		return "", fmt.Errorf("reading workspace %s: %w", path, err)
	}
	if len(resp.Kvs) == 0 {
		return "", ErrNotFound
	}
	return cluster.ID(resp.Kvs[0].Value), nil
}

// Descendants returns the ids and paths of every workspace below path, read
// from etcd so that deletion never misses a child another replica created.
func (x *Index) Descendants(ctx context.Context, path cluster.Path) (map[cluster.ID]cluster.Path, error) {
	resp, err := x.client.Get(ctx, x.pathsKey+string(path)+cluster.Separator, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("listing descendants of %s: %w", path, err)
	}
	out := make(map[cluster.ID]cluster.Path, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[cluster.ID(kv.Value)] = cluster.Path(strings.TrimPrefix(string(kv.Key), x.pathsKey))
	}
	return out, nil
}

// Count returns the number of workspaces known to this replica, root included.
func (x *Index) Count() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.byID)
}

// HasSynced reports whether the in-memory copy has loaded etcd's state.
func (x *Index) HasSynced() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.synced
}

func (x *Index) remember(id cluster.ID, rec record, rev int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if rev < x.revs[id] {
		return
	}
	x.revs[id] = rev
	x.byID[id] = rec
	x.byPath[rec.Path] = id
	x.misses.forget(string(id), string(rec.Path))
}

func (x *Index) forget(id cluster.ID, path cluster.Path, rev int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if rev < x.revs[id] {
		return
	}
	x.revs[id] = rev
	if x.byID[id].Path == path {
		delete(x.byID, id)
	}
	if x.byPath[path] == id {
		delete(x.byPath, path)
	}
}

// All reads every workspace record from etcd, root included.
func (x *Index) All(ctx context.Context) (map[cluster.ID]Info, map[cluster.ID]time.Time, error) {
	resp, err := x.client.Get(ctx, x.clustersKey, clientv3.WithPrefix())
	if err != nil {
		return nil, nil, fmt.Errorf("listing workspaces: %w", err)
	}
	infos := make(map[cluster.ID]Info, len(resp.Kvs))
	allocated := make(map[cluster.ID]time.Time, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if id, rec, ok := x.decode(kv.Key, kv.Value); ok {
			infos[id] = Info{ID: id, Path: rec.Path, Terminating: rec.Terminating}
			allocated[id] = rec.Allocated
		}
	}
	return infos, allocated, nil
}
