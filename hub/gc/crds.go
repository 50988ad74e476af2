package gc

import (
	"context"
	"fmt"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/controller"
)

// crdMonitors starts one monitor per served CRD and stops it when the CRD
// goes away, is being deleted or changes what it serves. CRDs are global;
// each monitor watches the CRD's instances in every workspace.
type crdMonitors struct {
	c      *Collector
	client metadata.Interface
	keyed  *controller.Keyed

	mu      sync.Mutex // guards running
	running map[string]*crdMonitor
}

// crdMonitor is the monitor of one CRD and what it was started for.
type crdMonitor struct {
	spec   crdSpec
	mon    *monitor
	cancel context.CancelFunc
}

// crdSpec is what a monitor of a CRD depends on; any change restarts it.
type crdSpec struct {
	kind       schema.GroupKind
	gvr        schema.GroupVersionResource
	namespaced bool
}

// WatchCustomResources makes the collector cover the instances of every
// CRD, through loopback clients built from cfg (a privileged identity that
// may list and watch /clusters/*). Call it before Run.
func (c *Collector) WatchCustomResources(cfg *rest.Config) error {
	mc, err := metadata.NewForConfig(clusterConfig(cfg))
	if err != nil {
		return fmt.Errorf("metadata client: %w", err)
	}
	// CRDs are hub-wide: their client addresses no cluster.
	crdClient, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("CRD client: %w", err)
	}
	f := apiextensionsinformers.NewSharedInformerFactory(crdClient, 0)
	return c.watchCRDs(mc, f.Apiextensions().V1().CustomResourceDefinitions().Informer())
}

// watchCRDs queues the CRDs of inf. Its queue takes turns as the
// collector's does: a CRD is charged to the tenant of the workspace the
// hub's storage recorded it in (controller.StoredClusterTenant). CRDs are
// hub-wide objects only hub administrators write (hub/server guards), so
// today that is one tenant, the hub's; the turns keep it so should a
// workspace ever own CRDs.
func (c *Collector) watchCRDs(mc metadata.Interface, inf cache.SharedIndexInformer) error {
	keyed, err := controller.NewKeyed("garbage-collector-crds", inf, nil, controller.StoredClusterTenant(inf.GetStore(), c.tenantOf))
	if err != nil {
		return err
	}
	// Keyed queues adds and updates; a deleted CRD must stop its monitor.
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj interface{}) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			keyed.Queue.Add(key)
		}
	}}); err != nil {
		return fmt.Errorf("CRD delete handler: %w", err)
	}
	c.crds = &crdMonitors{c: c, client: mc, keyed: keyed, running: map[string]*crdMonitor{}}
	return nil
}

func (m *crdMonitors) hasSynced() bool { return m.keyed.HasSynced() }

func (m *crdMonitors) run(ctx context.Context) {
	m.keyed.Run(ctx, 1, m.reconcile)
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, r := range m.running {
		r.cancel()
		delete(m.running, name)
	}
}

// reconcile brings the monitor of one CRD in line with the CRD.
func (m *crdMonitors) reconcile(ctx context.Context, name string) error {
	obj, exists, err := m.keyed.Informer.GetStore().GetByKey(name)
	if err != nil {
		return err
	}
	var want *crdSpec
	if exists {
		want = m.specOf(obj.(*apiextensionsv1.CustomResourceDefinition))
	}
	m.mu.Lock()
	cur := m.running[name]
	if cur != nil && want != nil && cur.spec == *want {
		m.mu.Unlock()
		return nil
	}
	if cur != nil {
		delete(m.running, name)
	}
	m.mu.Unlock()
	if cur != nil {
		m.stop(name, cur)
	}
	if want == nil {
		return nil
	}
	return m.start(ctx, name, *want)
}

// specOf returns what to watch for a CRD, nil when nothing should be: not
// yet established, being deleted (its instances are purged without
// passing the API, see hub/crdcleanup), serving no version, or naming a
// kind the collector already watches as a built-in.
func (m *crdMonitors) specOf(crd *apiextensionsv1.CustomResourceDefinition) *crdSpec {
	if crd.DeletionTimestamp != nil || !established(crd) {
		return nil
	}
	version := ""
	for _, v := range crd.Spec.Versions {
		if v.Served && (version == "" || v.Storage) {
			version = v.Name
		}
	}
	kind := crd.Status.AcceptedNames.Kind
	plural := crd.Status.AcceptedNames.Plural
	if version == "" || kind == "" || plural == "" {
		return nil
	}
	gk := schema.GroupKind{Group: crd.Spec.Group, Kind: kind}
	for _, s := range m.c.static {
		if s.kind == gk {
			return nil
		}
	}
	return &crdSpec{
		kind:       gk,
		gvr:        schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: plural},
		namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
	}
}

func (m *crdMonitors) start(ctx context.Context, name string, spec crdSpec) error {
	store := metadataStore{client: m.client, gvr: spec.gvr, namespaced: spec.namespaced}
	mon, err := m.c.newMonitor(spec.kind, spec.namespaced, store, store.listWatch(), &metav1.PartialObjectMetadata{})
	if err != nil {
		return err
	}
	mon.started = time.Now()
	mctx, cancel := context.WithCancel(ctx)
	m.mu.Lock()
	m.running[name] = &crdMonitor{spec: spec, mon: mon, cancel: cancel}
	m.mu.Unlock()
	m.c.kmu.Lock()
	m.c.byKind[spec.kind] = mon
	m.c.kmu.Unlock()
	klog.InfoS("Garbage collector watching custom resources", "crd", name, "resource", spec.gvr)
	go mon.informer.RunWithContext(mctx)
	go func() {
		// Dependents that named this kind before it was watched were
		// kept (an unknown owner is assumed to exist): look again.
		if cache.WaitForCacheSync(mctx.Done(), mon.hasSynced) {
			m.c.requeueReferencing(spec.kind)
		}
	}()
	return nil
}

func (m *crdMonitors) stop(name string, r *crdMonitor) {
	r.cancel()
	m.c.kmu.Lock()
	if m.c.byKind[r.spec.kind] == r.mon {
		delete(m.c.byKind, r.spec.kind)
	}
	m.c.kmu.Unlock()
	m.c.forgetAll(r.mon)
	klog.InfoS("Garbage collector stopped watching custom resources", "crd", name, "resource", r.spec.gvr)
}

// customSynced reports whether every custom resource monitor has listed
// its objects, or has been trying for longer than syncGrace: a CRD whose
// instances cannot be listed must not hold every foreground deletion
// forever.
func (m *crdMonitors) customSynced() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.running {
		if !r.mon.hasSynced() && time.Since(r.mon.started) < syncGrace {
			return false
		}
	}
	return true
}

// syncGrace is how long an owner's deletion waits for a new custom
// resource monitor to list its objects.
const syncGrace = 30 * time.Second

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
