package core

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// liveLister is the --disable-caching lister: every call is a read on the
// downstream with the provider's credential, so answers are never stale
// (at the price of one downstream call per lookup).
type liveLister struct {
	dyn       dynamic.Interface
	gvr       schema.GroupVersionResource
	namespace string
	timeout   time.Duration
}

var (
	_ cache.GenericLister          = (*liveLister)(nil)
	_ cache.GenericNamespaceLister = (*liveLister)(nil)
)

func (l *liveLister) client() dynamic.ResourceInterface {
	if l.namespace != "" {
		return l.dyn.Resource(l.gvr).Namespace(l.namespace)
	}
	return l.dyn.Resource(l.gvr)
}

// List reads every object matching selector.
func (l *liveLister) List(selector labels.Selector) ([]runtime.Object, error) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	opts := metav1.ListOptions{}
	if selector != nil && !selector.Empty() {
		opts.LabelSelector = selector.String()
	}
	list, err := l.client().List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("live list %s: %w", l.gvr.String(), err)
	}
	out := make([]runtime.Object, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// Get reads one object; a missing one is a NotFound error, as from a lister.
func (l *liveLister) Get(name string) (runtime.Object, error) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	obj, err := l.client().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("live get %s %q: %w", l.gvr.String(), name, err)
	}
	return obj, nil
}

// ByNamespace narrows the lister to one namespace.
func (l *liveLister) ByNamespace(namespace string) cache.GenericNamespaceLister {
	return &liveLister{dyn: l.dyn, gvr: l.gvr, namespace: namespace, timeout: l.timeout}
}
