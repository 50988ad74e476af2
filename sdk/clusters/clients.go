package clusters

import (
	"context"
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Clients builds one client per workspace on demand, with ForCluster on
// the provider's config, and keeps it: a controller that writes back to
// the workspace an object came from needs the same client again and
// again. It is safe for concurrent use. T is whatever build makes, such
// as dynamic.NewForConfig's *dynamic.DynamicClient or
// kubernetes.NewForConfig's *kubernetes.Clientset.
type Clients[T any] struct {
	cfg   *rest.Config
	build func(*rest.Config) (T, error)

	mu sync.Mutex   // guards m
	m  map[string]T // by cluster as the caller named it
}

// NewClients is a Clients of cfg's identity.
func NewClients[T any](cfg *rest.Config, build func(*rest.Config) (T, error)) *Clients[T] {
	return &Clients[T]{cfg: cfg, build: build, m: map[string]T{}}
}

// For is the client of one workspace (path or logical cluster id). The
// wildcard is refused: a client from here acts in one workspace only.
func (c *Clients[T]) For(cluster string) (T, error) {
	var zero T
	if cluster == WildcardCluster {
		return zero, errors.New("clusters: a workspace client cannot be for every workspace")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.m[cluster]; ok {
		return cl, nil
	}
	cfg, err := ForCluster(c.cfg, cluster)
	if err != nil {
		return zero, err
	}
	cl, err := c.build(cfg)
	if err != nil {
		return zero, fmt.Errorf("clusters: client for %q: %w", cluster, err)
	}
	c.m[cluster] = cl
	return cl, nil
}

// ListWatch lists and watches one resource through ri, typically a
// dynamic client on a Wildcard config: the ListerWatcher of
// InformerOptions for unstructured objects.
func ListWatch(ri dynamic.ResourceInterface) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return ri.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return ri.Watch(ctx, o)
		},
	}
}

// NewResourceInformer is NewInformer over one resource (gvr) of every
// workspace the provider may see, as *unstructured.Unstructured objects,
// through a dynamic client on the Wildcard of cfg. o's ListerWatcher and
// ObjectType are set here; the rest of o applies as given.
func NewResourceInformer(cfg *rest.Config, gvr schema.GroupVersionResource, o InformerOptions) (*Informer, error) {
	wild, err := Wildcard(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(wild)
	if err != nil {
		return nil, fmt.Errorf("clusters: %s client: %w", gvr.Resource, err)
	}
	o.ListerWatcher, o.ObjectType = ListWatch(dyn.Resource(gvr)), &unstructured.Unstructured{}
	return NewInformer(o)
}
