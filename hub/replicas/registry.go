package replicas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/etcd"
)

const (
	// registryTTL is the etcd lease TTL of a registration: a killed
	// replica disappears from the registry within it.
	registryTTL = 10
	// lookupCache is how long a looked-up registration is reused.
	lookupCache = 5 * time.Second
)

// Replica is one hub replica as registered in etcd.
type Replica struct {
	Name string `json:"name"`
	// InternalURL is where other replicas reach this one.
	InternalURL string `json:"internalURL"`
	// CABundle is PEM; it verifies the replica's serving certificate.
	CABundle []byte `json:"caBundle"`
}

// ErrUnknownReplica means no live replica of that name is registered.
var ErrUnknownReplica = errors.New("replica not registered")

// Registry registers this replica in etcd and looks the others up. Keys
// are <etcd prefix>/wharf.dev/replicas/<name>, each on an etcd lease kept
// alive by Run, so a dead replica's entry expires.
type Registry struct {
	client *clientv3.Client
	// writes retries the registration across an etcd member or leader
	// failure, so that it lands without waiting for Run's next round.
	writes *etcd.Writer
	prefix string
	self   Replica

	mu    sync.Mutex
	cache map[string]cachedReplica
}

type cachedReplica struct {
	r       Replica
	fetched time.Time
}

// NewRegistry returns the registry under etcdPrefix (normally /registry).
func NewRegistry(client *clientv3.Client, etcdPrefix string, self Replica) *Registry {
	return &Registry{
		client: client,
		writes: etcd.NewWriter(client),
		prefix: strings.TrimSuffix(etcdPrefix, "/") + "/wharf.dev/replicas/",
		self:   self,
		cache:  map[string]cachedReplica{},
	}
}

// Self is this replica's registration.
func (r *Registry) Self() Replica { return r.self }

// Run registers this replica and keeps the registration alive until ctx is
// done, re-registering when the etcd lease is lost (etcd unreachable for
// longer than the TTL). At exit the lease is revoked, so the entry goes at
// once rather than after the TTL.
func (r *Registry) Run(ctx context.Context) {
	log := klog.FromContext(ctx).WithValues("replica", r.self.Name)
	for ctx.Err() == nil {
		lease, alive, err := r.register(ctx)
		if err != nil {
			log.Error(err, "Registering hub replica; retrying")
			if !sleep(ctx, 2*time.Second) {
				return
			}
			continue
		}
		log.Info("Registered hub replica", "internalURL", r.self.InternalURL)
		for range alive {
			// Drain keepalive answers until the channel closes: lease lost
			// or ctx done.
		}
		if ctx.Err() != nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			if _, err := r.client.Revoke(rctx, lease); err != nil {
				log.V(2).Info("Revoking replica registration failed; it expires", "err", err)
			}
			cancel()
			return
		}
		log.Info("Hub replica registration lost; registering again")
	}
}

func (r *Registry) register(ctx context.Context) (clientv3.LeaseID, <-chan *clientv3.LeaseKeepAliveResponse, error) {
	val, err := json.Marshal(r.self)
	if err != nil {
		return 0, nil, err
	}
	var g *clientv3.LeaseGrantResponse
	if err := r.writes.Do(ctx, "grant", func(ctx context.Context) error {
		var err error
		g, err = r.client.Grant(ctx, registryTTL)
		return err
	}); err != nil {
		return 0, nil, fmt.Errorf("granting lease: %w", err)
	}
	// The same value on the same lease: re-sending is harmless.
	if _, err := r.writes.Put(ctx, r.prefix+r.self.Name, string(val), clientv3.WithLease(g.ID)); err != nil {
		return 0, nil, fmt.Errorf("writing registration: %w", err)
	}
	alive, err := r.client.KeepAlive(ctx, g.ID)
	if err != nil {
		return 0, nil, fmt.Errorf("keeping lease alive: %w", err)
	}
	return g.ID, alive, nil
}

// Lookup returns the live registration of the named replica. Answers are
// cached for a few seconds: a replica's address rarely changes, and a
// stale one only costs a failed dial (503) until the cache expires.
func (r *Registry) Lookup(ctx context.Context, name string) (Replica, error) {
	r.mu.Lock()
	c, ok := r.cache[name]
	r.mu.Unlock()
	if ok && time.Since(c.fetched) < lookupCache {
		return c.r, nil
	}
	resp, err := r.client.Get(ctx, r.prefix+name)
	if err != nil {
		return Replica{}, fmt.Errorf("looking up replica %q: %w", name, err)
	}
	if len(resp.Kvs) == 0 {
		return Replica{}, fmt.Errorf("%w: %q", ErrUnknownReplica, name)
	}
	var rep Replica
	if err := json.Unmarshal(resp.Kvs[0].Value, &rep); err != nil {
		return Replica{}, fmt.Errorf("decoding replica %q: %w", name, err)
	}
	r.mu.Lock()
	r.cache[name] = cachedReplica{r: rep, fetched: time.Now()}
	r.mu.Unlock()
	return rep, nil
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
