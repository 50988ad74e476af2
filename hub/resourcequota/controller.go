package resourcequota

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/controller"
)

// Controller recounts status.used of every ResourceQuota: its work item
// is one namespace of one workspace ("<cluster>/<namespace>"), queued when
// a quota there is created, when any object there is deleted, and for
// every quota each Interval.
type Controller struct {
	Counter  *Counter
	Get      rest.Getter
	Status   rest.Updater
	Interval time.Duration
	// TenantOf charges a namespace's recount to the tenant of its
	// workspace. The queue takes turns between tenants: a tenant's
	// hundreds of quotas, each naming hundreds of resources to count,
	// delay another tenant's new quota by one recount, never by all of
	// them (issue 24). Nil: one tenant.
	TenantOf controller.TenantOfCluster
}

// newQueue is the controller's work queue: fair between tenants, keyed
// "<cluster>/<namespace>".
func (c *Controller) newQueue() workqueue.TypedRateLimitingInterface[string] {
	return controller.NewFair(controller.FairConfig[string]{Name: "wharf-resourcequota", TenantOf: controller.ClusterKeyTenant(c.TenantOf)})
}

func (c *Controller) quotaPrefix() string {
	return strings.TrimSuffix(c.Counter.Prefix, "/") + "/core/resourcequotas/"
}

// Run works until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	q := c.newQueue()
	go func() { <-ctx.Done(); q.ShutDown() }()
	go c.watch(ctx, q)
	go wait.UntilWithContext(ctx, func(ctx context.Context) { c.enqueueAll(ctx, q) }, c.Interval)
	for {
		key, quit := q.Get()
		if quit {
			return
		}
		if err := c.sync(ctx, key); err != nil {
			klog.ErrorS(err, "Recounting resource quotas", "namespace", key)
			q.AddRateLimited(key)
		} else {
			q.Forget(key)
		}
		q.Done(key)
	}
}

// watch queues the namespace of every quota created and of every delete
// in a namespace that has a quota. Which namespaces have one it learns
// from a list, then from the watch that follows it from the list's
// revision: a delete elsewhere (most of them: most namespaces have no
// quota) costs no etcd read, where one per delete was about 1% of the
// hub's CPU with nobody misbehaving (issue 24).
func (c *Controller) watch(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) {
	root := strings.TrimSuffix(c.Counter.Prefix, "/") + "/"
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		list, err := c.Counter.Client.Get(ctx, c.quotaPrefix(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			klog.ErrorS(err, "Listing resource quotas")
			return
		}
		quotas := map[string]int{} // namespace: how many quotas
		for _, kv := range list.Kvs {
			if ns, ok := namespaceOfKey(strings.TrimPrefix(string(kv.Key), root)); ok {
				quotas[ns]++
			}
		}
		// From the list's revision on: no quota created or deleted in
		// between is missed. A compacted revision ends the watch and
		// the loop lists again.
		for resp := range c.Counter.Client.Watch(clientv3.WithRequireLeader(ctx), root, clientv3.WithPrefix(), clientv3.WithRev(list.Header.Revision+1)) {
			for _, ev := range resp.Events {
				k := string(ev.Kv.Key)
				ns, ok := namespaceOfKey(strings.TrimPrefix(k, root))
				if !ok {
					continue
				}
				isQuota := strings.HasPrefix(k, c.quotaPrefix())
				switch {
				case ev.Type == clientv3.EventTypePut:
					// Of the writes, only a quota's creation: the
					// status writes of admission would otherwise each
					// queue a recount that, racing the object admission
					// just charged for, could undercount it. A spec
					// change needs none: admission counts the names
					// used lacks.
					if isQuota && ev.IsCreate() {
						quotas[ns]++
						q.Add(ns)
					}
				case isQuota:
					if quotas[ns]--; quotas[ns] <= 0 {
						delete(quotas, ns)
					}
				case quotas[ns] > 0:
					q.Add(ns)
				}
			}
		}
	}, time.Second)
}

// namespaceOfKey is "<cluster>/<namespace>" of a key
// <group>/<resource>/<cluster>/<namespace>/<name>.
func namespaceOfKey(rest string) (string, bool) {
	segs := strings.Split(rest, "/")
	if len(segs) != 5 || !cluster.IsValidID(segs[2]) || segs[3] == "" {
		return "", false
	}
	return segs[2] + "/" + segs[3], true
}

func (c *Controller) enqueueAll(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) {
	resp, err := c.Counter.Client.Get(ctx, c.quotaPrefix(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		klog.ErrorS(err, "Listing resource quotas")
		return
	}
	root := strings.TrimSuffix(c.Counter.Prefix, "/") + "/"
	for _, kv := range resp.Kvs {
		if ns, ok := namespaceOfKey(strings.TrimPrefix(string(kv.Key), root)); ok {
			q.Add(ns)
		}
	}
}

// sync recounts every quota of one namespace.
func (c *Controller) sync(ctx context.Context, key string) error {
	id, namespace, _ := strings.Cut(key, "/")
	resp, err := c.Counter.Client.Get(ctx, c.quotaPrefix()+key+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return fmt.Errorf("listing quotas of %s: %w", key, err)
	}
	ctx = request.WithNamespace(cluster.WithCluster(ctx, cluster.ID(id)), namespace)
	for _, kv := range resp.Kvs {
		name := string(kv.Key)[strings.LastIndex(string(kv.Key), "/")+1:]
		if err := c.recount(ctx, cluster.ID(id), namespace, name); err != nil {
			return err
		}
	}
	return nil
}

func (c *Controller) recount(ctx context.Context, id cluster.ID, namespace, name string) error {
	obj, err := c.Get.Get(ctx, name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	rq, ok := obj.(*corev1.ResourceQuota)
	if !ok {
		return fmt.Errorf("unexpected %T", obj)
	}
	used := corev1.ResourceList{}
	for n := range rq.Status.Hard {
		gr, counted := ResourceOf(n)
		if !counted {
			// Names that count no objects the hub serves (cpu, ...)
			// are used 0, as kube reports them with no pods.
			used[n] = *resourceCount(0)
			continue
		}
		n64, err := c.Counter.Count(ctx, id, namespace, gr)
		if err != nil {
			return err
		}
		used[n] = *resourceCount(n64)
	}
	if equality.Semantic.DeepEqual(used, rq.Status.Used) {
		return nil
	}
	out := rq.DeepCopy()
	out.Status.Used = used
	_, _, err = c.Status.Update(ctx, name, rest.DefaultUpdatedObjectInfo(out), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		// Written meanwhile: its watch event queues the namespace again.
		return nil
	}
	return err
}
