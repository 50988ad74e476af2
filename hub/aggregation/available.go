package aggregation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/controller"
	wstorage "github.com/wharfhub/wharf/hub/storage"
	"github.com/wharfhub/wharf/sdk"
)

// kube-aggregator's reasons for the Available condition.
const (
	ReasonPassed               = "Passed"
	ReasonServiceNotFound      = "ServiceNotFound"
	ReasonMissingEndpoints     = "MissingEndpoints"
	ReasonFailedDiscoveryCheck = "FailedDiscoveryCheck"
)

// maxDiscovery bounds a provider's discovery answer.
const maxDiscovery = 4 << 20

// availabilityWorkers is how many APIServices are checked at once: a check
// may wait up to its discovery timeout on a provider.
const availabilityWorkers = 2

// Run checks each APIService when it changes and again each interval,
// until ctx is done. Every replica runs it; they compute the same
// condition from the same inputs and write only on change.
//
// The checks go through a queue that takes turns between tenants
// (hub/controller.NewFair, the APIService's workspace charged to its
// tenant): a tenant whose providers registered thousands of APIServices,
// or whose provider answers discovery slowly, delays another tenant's
// check by one check per worker, never by a pass over all of hers (issue
// 24, item 5; a pass over every APIService at each change was the loop
// before).
func (a *Aggregator) Run(ctx context.Context) {
	q := a.newQueue()
	enqueue := func(obj any) {
		// The index keys by cluster: "<cluster>//<name>".
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			q.Add(key)
		}
	}
	if _, err := a.index.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		// A deleted APIService's discovery goes with it, so one created
		// again starts from its provider's answer, not a stale one.
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if s, ok := obj.(*apiregv1.APIService); ok {
				id, _ := wstorage.SplitClusterNamespace(s)
				a.setDiscovery(gvKey(id, s.Spec.Group, s.Spec.Version), nil)
			}
		},
	}); err != nil {
		klog.FromContext(ctx).Error(err, "Following APIServices")
		q.ShutDown()
		return
	}
	if !cache.WaitForCacheSync(ctx.Done(), a.index.HasSynced) {
		q.ShutDown()
		return
	}
	controller.Run(ctx, q, availabilityWorkers, "apiservice-availability", func(ctx context.Context, key string) error {
		a.checkKey(ctx, q, key)
		return nil
	})
}

// newQueue is the checks' queue, keyed as the index keys APIServices
// ("<cluster>//<name>") and charged to the tenant of that cluster.
func (a *Aggregator) newQueue() workqueue.TypedRateLimitingInterface[string] {
	return controller.NewFair(controller.FairConfig[string]{
		Name: "apiservice-availability", TenantOf: controller.ClusterKeyTenant(a.tenantOf), Clock: a.clock,
	})
}

// checkKey checks one APIService (an index key) if it routes, and looks
// at it again after the interval: its provider may come or go meanwhile.
func (a *Aggregator) checkKey(ctx context.Context, q workqueue.TypedDelayingInterface[string], key string) {
	obj, exists, err := a.index.Informer().GetStore().GetByKey(key)
	if err != nil || !exists {
		return
	}
	s := obj.(*apiregv1.APIService)
	id, _ := wstorage.SplitClusterNamespace(s)
	if _, routed, ok := a.index.Route(id, s.Spec.Group, s.Spec.Version); !ok || routed != s {
		return
	}
	cond := a.check(ctx, id, s)
	switch err := a.writeCondition(ctx, id, s, cond); {
	case apierrors.IsConflict(err):
		// Written meanwhile: look again at once (once done, the queue
		// hands the key out again, in its tenant's turn).
		q.Add(key)
		return
	case err != nil:
		klog.FromContext(ctx).V(2).Info("Writing APIService status", "cluster", id, "apiservice", s.Name, "err", err)
	}
	q.AddAfter(key, a.interval)
}

// check fetches the provider's discovery for the APIService's group
// version, caches it on success and returns the Available condition.
// Messages depend on nothing replica-local, so replicas agree.
func (a *Aggregator) check(ctx context.Context, id cluster.ID, s *apiregv1.APIService) apiregv1.APIServiceCondition {
	provider := s.Spec.Service.Name
	cond := apiregv1.APIServiceCondition{Type: apiregv1.Available, Status: apiregv1.ConditionFalse}
	key := gvKey(id, s.Spec.Group, s.Spec.Version)
	t, loaded := a.providers.Get(provider)
	switch {
	case !loaded || !a.enabled(id, provider):
		cond.Reason = ReasonServiceNotFound
		cond.Message = fmt.Sprintf("service/%s in %q is not present", provider, ProviderNamespace)
		return cond
	case t.Transport == nil && t.Remote == nil:
		cond.Reason = ReasonMissingEndpoints
		cond.Message = fmt.Sprintf("endpoints for service/%s in %q have no addresses", provider, ProviderNamespace)
		return cond
	}
	list, err := a.fetchDiscovery(ctx, id, provider, s)
	if err != nil {
		cond.Reason = ReasonFailedDiscoveryCheck
		cond.Message = fmt.Sprintf("failing or missing response from provider %s: %v", provider, err)
		return cond
	}
	a.setDiscovery(key, list)
	cond.Status, cond.Reason, cond.Message = apiregv1.ConditionTrue, ReasonPassed, "all checks passed"
	return cond
}

// fetchDiscovery asks the provider for /apis/<group>/<version> through
// the aggregation route itself (identity headers and the original path
// set, the hub as the caller), so a provider sees discovery exactly as a
// client's request.
func (a *Aggregator) fetchDiscovery(ctx context.Context, id cluster.ID, provider string, s *apiregv1.APIService) (*metav1.APIResourceList, error) {
	path, err := a.workspaces.PathOf(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("workspace unknown")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	p := "/apis/" + s.Spec.Group + "/" + s.Spec.Version
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, p, nil)
	if err != nil {
		return nil, err
	}
	r.Header.Set("Accept", "application/json")
	rec := &recorder{header: http.Header{}}
	ident := sdk.Identity{User: HubUser, Tenant: string(path), Cluster: string(id)}
	a.proxy.ServeAggregated(rec, r, provider, ident, "/clusters/"+string(path)+p)
	if rec.code != http.StatusOK {
		return nil, fmt.Errorf("bad status from %s: %d", p, rec.code)
	}
	list := &metav1.APIResourceList{}
	if err := json.Unmarshal(rec.body.Bytes(), list); err != nil {
		return nil, fmt.Errorf("discovery answer of %s not understood", p)
	}
	if list.GroupVersion != s.Spec.Group+"/"+s.Spec.Version {
		return nil, fmt.Errorf("discovery answer of %s is for %q", p, list.GroupVersion)
	}
	return list, nil
}

// writeCondition stores cond if it differs from the stored one; the
// transition time moves only when the status does.
func (a *Aggregator) writeCondition(ctx context.Context, id cluster.ID, cached *apiregv1.APIService, cond apiregv1.APIServiceCondition) error {
	if same(current(cached), &cond) {
		return nil
	}
	ctx = request.WithNamespace(cluster.WithCluster(ctx, id), metav1.NamespaceNone)
	set := rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		s, ok := old.(*apiregv1.APIService)
		if !ok {
			return nil, errUnexpected(old)
		}
		s = s.DeepCopy()
		prev := current(s)
		if same(prev, &cond) {
			return nil, errUnchanged
		}
		c := cond
		c.LastTransitionTime = metav1.NewTime(a.clock.Now().Truncate(time.Second))
		if prev != nil && prev.Status == c.Status {
			c.LastTransitionTime = prev.LastTransitionTime
		}
		setCondition(s, c)
		return s, nil
	})
	_, _, err := a.status.Update(ctx, cached.Name, set, nil, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	switch {
	case err == nil, err == errUnchanged, apierrors.IsNotFound(err):
		return nil
	}
	return err
}

var errUnchanged = fmt.Errorf("condition unchanged")

func current(s *apiregv1.APIService) *apiregv1.APIServiceCondition {
	for i := range s.Status.Conditions {
		if s.Status.Conditions[i].Type == apiregv1.Available {
			return &s.Status.Conditions[i]
		}
	}
	return nil
}

func same(a, b *apiregv1.APIServiceCondition) bool {
	return a != nil && b != nil && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message
}

func setCondition(s *apiregv1.APIService, c apiregv1.APIServiceCondition) {
	for i := range s.Status.Conditions {
		if s.Status.Conditions[i].Type == c.Type {
			s.Status.Conditions[i] = c
			return
		}
	}
	s.Status.Conditions = append(s.Status.Conditions, c)
}

// recorder is the ResponseWriter of the hub's own discovery requests; it
// keeps at most maxDiscovery bytes.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	if r.body.Len()+len(p) > maxDiscovery {
		return 0, io.ErrShortWrite
	}
	return r.body.Write(p)
}

// Flush lets the reverse proxy flush; nothing to do here.
func (r *recorder) Flush() {}
