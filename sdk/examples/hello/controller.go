package main

import (
	"context"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/sdk/clusters"
	"github.com/wharfhub/wharf/sdk/fairqueue"
)

var greetingsGVR = schema.GroupVersionResource{Group: "hello.wharf.dev", Version: "v1alpha1", Resource: "greetings"}

// replier answers every Greeting in every workspace that enabled hello:
// status.reply = "Hello, <spec.message>". It is the sample of a provider
// controller across workspaces: one wildcard informer keyed by cluster,
// and writes through a client scoped to the object's own workspace, and a
// fair queue (sdk/fairqueue): tenants take turns, so one tenant's
// thousands of Greetings never hold up another's (issue 24, B-D).
type replier struct {
	informer *clusters.Informer
	queue    workqueue.TypedRateLimitingInterface[string]
	// tenants names the tenant of a workspace from the paths the hub
	// asserted on requests to the backend (main.go); until one is
	// known, each workspace is a tenant of its own.
	tenants *fairqueue.Tenants
	// clients holds one client per workspace written to, on the
	// provider's own identity.
	clients *clusters.Clients[*dynamic.DynamicClient]
}

func newReplier(cfg *rest.Config, tenants *fairqueue.Tenants, maxPerTenant int) (*replier, error) {
	r := &replier{clients: clusters.NewClients(cfg, dynamic.NewForConfig), tenants: tenants}
	r.queue = fairqueue.New(fairqueue.Config[string]{
		Name:         "hello-greetings",
		TenantOf:     tenants.OfKey,
		MaxPerTenant: maxPerTenant,
		// A tenant over the bound loses its newest keys from the queue,
		// never its Greetings: they are in the informer's cache, and
		// resync adds back those still unanswered once its turn drains.
		Resync: r.resync,
	})
	enqueue := func(obj interface{}) {
		if key, err := clusters.Key(obj); err == nil {
			r.queue.Add(key)
		}
	}
	// All namespaces of all workspaces that enabled hello.
	var err error
	r.informer, err = clusters.NewResourceInformer(cfg, greetingsGVR, clusters.InformerOptions{
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    enqueue,
			UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
		},
	})
	return r, err
}

// run serves until ctx ends.
func (r *replier) run(ctx context.Context) {
	defer r.queue.ShutDown()
	go r.informer.Run(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), r.informer.HasSynced) {
		return
	}
	go func() {
		<-ctx.Done()
		r.queue.ShutDown()
	}()
	for r.next(ctx) {
	}
}

func (r *replier) next(ctx context.Context) bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	if err := r.reply(ctx, key); err != nil {
		klog.FromContext(ctx).Error(err, "replying to greeting", "key", key)
		r.queue.AddRateLimited(key)
		return true
	}
	r.queue.Forget(key)
	return true
}

// resync adds back the unanswered Greetings of one tenant, from the cache.
func (r *replier) resync(tenant string) {
	l := r.informer.Lister()
	for _, cluster := range l.Clusters() {
		if r.tenants.Of(cluster) != tenant {
			continue
		}
		objs, err := l.List(cluster, nil)
		if err != nil {
			continue
		}
		for _, o := range objs {
			if g := o.(*unstructured.Unstructured); !answered(g) {
				r.queue.Add(clusters.ToKey(cluster, g.GetNamespace(), g.GetName()))
			}
		}
	}
}

// answered reports whether g's reply is up to date.
func answered(g *unstructured.Unstructured) bool {
	msg, _, _ := unstructured.NestedString(g.Object, "spec", "message")
	got, _, _ := unstructured.NestedString(g.Object, "status", "reply")
	return got == "Hello, "+msg
}

// reply writes status.reply of one Greeting, in the workspace it came from.
func (r *replier) reply(ctx context.Context, key string) error {
	cluster, ns, name, err := clusters.SplitKey(key)
	if err != nil {
		return nil // never retried: the key is malformed
	}
	obj, ok, err := r.informer.Lister().Get(cluster, ns, name)
	if err != nil || !ok {
		return err
	}
	g := obj.(*unstructured.Unstructured)
	if answered(g) {
		return nil
	}
	msg, _, _ := unstructured.NestedString(g.Object, "spec", "message")
	want := "Hello, " + msg
	// The write goes to the cluster the object was read from, never to
	// another.
	dyn, err := r.clients.For(cluster)
	if err != nil {
		return err
	}
	g = g.DeepCopy()
	if err := unstructured.SetNestedField(g.Object, want, "status", "reply"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = dyn.Resource(greetingsGVR).Namespace(ns).UpdateStatus(ctx, g, metav1.UpdateOptions{})
	return err
}

// list returns the greetings of one workspace, from the cache.
func (r *replier) list(cluster string) ([]greeting, error) {
	objs, err := r.informer.Lister().List(cluster, nil)
	if err != nil {
		return nil, err
	}
	out := make([]greeting, 0, len(objs))
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		msg, _, _ := unstructured.NestedString(u.Object, "spec", "message")
		reply, _, _ := unstructured.NestedString(u.Object, "status", "reply")
		out = append(out, greeting{Namespace: u.GetNamespace(), Name: u.GetName(), Message: msg, Reply: reply})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name
	})
	return out, nil
}

// greeting is one entry of GET /greetings.
type greeting struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Message   string `json:"message"`
	Reply     string `json:"reply"`
}
