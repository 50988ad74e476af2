package edges

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/sdk/clusters"
)

// store reads and writes Edges. Reads prefer the informer's cache (keyed by
// cluster); writes always go to the object's own workspace, never another.
type store struct {
	// clientFor returns the Edge client of one workspace.
	clientFor func(cluster string) (dynamic.ResourceInterface, error)
	// indexer is the informer's cache (keyed by clusters.Key); nil when
	// no informer runs, in which case every read is live.
	indexer cache.Indexer

	mu      sync.Mutex
	clients map[string]dynamic.ResourceInterface
}

// hubClientFor builds clientFor on the provider's own identity: one client
// per workspace, through clusters.ForCluster.
func hubClientFor(cfg *rest.Config) func(string) (dynamic.ResourceInterface, error) {
	return func(cluster string) (dynamic.ResourceInterface, error) {
		c, err := clusters.ForCluster(cfg, cluster)
		if err != nil {
			return nil, err
		}
		dyn, err := dynamic.NewForConfig(c)
		if err != nil {
			return nil, fmt.Errorf("edges client: %w", err)
		}
		return dyn.Resource(v1alpha1.GVR), nil
	}
}

func (s *store) client(cluster string) (dynamic.ResourceInterface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[cluster]; ok {
		return c, nil
	}
	c, err := s.clientFor(cluster)
	if err != nil {
		return nil, err
	}
	if s.clients == nil {
		s.clients = map[string]dynamic.ResourceInterface{}
	}
	s.clients[cluster] = c
	return c, nil
}

// cached returns the Edge from the cache, if any.
func (s *store) cached(cluster, name string) (*v1alpha1.Edge, bool) {
	if s.indexer == nil {
		return nil, false
	}
	obj, ok, err := clusters.NewLister(s.indexer).Get(cluster, "", name)
	if err != nil || !ok {
		return nil, false
	}
	e, err := fromObject(obj)
	if err != nil {
		return nil, false
	}
	return e, true
}

// keys lists the cached edges' keys.
func (s *store) keys() []string {
	if s.indexer == nil {
		return nil
	}
	return s.indexer.ListKeys()
}

// get is a live GET (a NotFound error when the edge does not exist).
func (s *store) get(ctx context.Context, cluster, name string) (*v1alpha1.Edge, error) {
	c, err := s.client(cluster)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	u, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return fromObject(u)
}

// cachedOrGet prefers the cache and falls back to a live GET.
func (s *store) cachedOrGet(ctx context.Context, cluster, name string) (*v1alpha1.Edge, error) {
	if e, ok := s.cached(cluster, name); ok {
		return e, nil
	}
	return s.get(ctx, cluster, name)
}

// update writes metadata and spec with e's resourceVersion as the
// precondition: a concurrent writer makes it fail with a Conflict.
func (s *store) update(ctx context.Context, cluster string, e *v1alpha1.Edge) (*v1alpha1.Edge, error) {
	return s.write(ctx, cluster, e, false)
}

// updateStatus writes the status subresource.
func (s *store) updateStatus(ctx context.Context, cluster string, e *v1alpha1.Edge) (*v1alpha1.Edge, error) {
	return s.write(ctx, cluster, e, true)
}

func (s *store) write(ctx context.Context, cluster string, e *v1alpha1.Edge, status bool) (*v1alpha1.Edge, error) {
	if e.ResourceVersion == "" {
		// Without a resourceVersion an update is unconditional, which
		// would break the single-use guarantees built on it.
		return nil, apierrors.NewInternalError(fmt.Errorf("edges: update of %q without a resourceVersion", e.Name))
	}
	c, err := s.client(cluster)
	if err != nil {
		return nil, err
	}
	u, err := toUnstructured(e)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out *unstructured.Unstructured
	if status {
		out, err = c.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	} else {
		out, err = c.Update(ctx, u, metav1.UpdateOptions{})
	}
	if err != nil {
		return nil, err
	}
	return fromObject(out)
}

func fromObject(obj runtime.Object) (*v1alpha1.Edge, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("edges: unexpected %T in the cache", obj)
	}
	e := &v1alpha1.Edge{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, e); err != nil {
		return nil, fmt.Errorf("edges: decode %q: %w", u.GetName(), err)
	}
	return e, nil
}

func toUnstructured(e *v1alpha1.Edge) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(e)
	if err != nil {
		return nil, fmt.Errorf("edges: encode %q: %w", e.Name, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(v1alpha1.SchemeGroupVersion.String())
	u.SetKind(v1alpha1.Kind)
	return u, nil
}

// deepCopy copies an Edge (the API types have no generated DeepCopy).
func deepCopy(e *v1alpha1.Edge) *v1alpha1.Edge {
	u, err := toUnstructured(e)
	if err != nil {
		return e
	}
	out, err := fromObject(u.DeepCopy())
	if err != nil {
		return e
	}
	return out
}
