package hub

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wharfhub/wharf/sdk/clusters"
)

// Issue 24, "fair background work": the hub's controllers that serve every
// workspace used one FIFO queue. One tenant's backlog (held workspace
// deletions, B4; objects whose owners are gone, B7) made every other
// tenant's background work wait until it drained. The queues now take
// turns between tenants.
//
// The rows assert order, not time: the victim's work must be done while
// the attacker's backlog is still there. On the FIFO queue the victim's
// item came after the whole backlog, so the backlog had drained first.

var workspacesGVR = schema.GroupVersionResource{Group: "tenancy.wharf.dev", Version: "v1alpha1", Resource: "workspaces"}

// bgClients are the admin's clients of one workspace.
type bgClients struct {
	kube *kubernetes.Clientset
	dyn  dynamic.Interface
}

func bgClientsFor(t *testing.T, h *hubProc, ws string) bgClients {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", h.Kubecfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	in, err := clusters.ForCluster(cfg, ws)
	if err != nil {
		t.Fatal(err)
	}
	return bgClients{kube: kubernetes.NewForConfigOrDie(in), dyn: dynamic.NewForConfigOrDie(rest.CopyConfig(in))}
}

// parallel runs f(i) for i in [0,n) on 16 goroutines and returns the first
// error.
func parallel(n int, f func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

func newWorkspace(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "tenancy.wharf.dev/v1alpha1", "kind": "Workspace", "metadata": map[string]any{"name": name}}}
}

// contentReported counts the Workspaces in list that the deletion
// controller has looked at: it records ContentDeleted on a deletion that
// content holds.
func contentReported(list *unstructured.UnstructuredList) int {
	n := 0
	for _, w := range list.Items {
		conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "ContentDeleted" {
				n++
				break
			}
		}
	}
	return n
}

// TestAttackLimitsBackgroundB4: an attacker's heldChildren child
// workspaces are deleted while a finalizer on their content holds each;
// a victim of another tenant then deletes an empty workspace. It is
// deleted before the deletion controller has got through the attacker's
// held deletions (with the FIFO queue it waited for every one of them,
// and then for every rescan of them every two seconds).
func TestAttackLimitsBackgroundB4(t *testing.T) {
	t.Parallel()
	const heldChildren = 100
	ctx := context.Background()
	h := startHub(t, hubOptions{})
	h.createWorkspace("root", "bg-attacker")
	h.createWorkspace("root", "bg-victim")
	h.createWorkspace("root:bg-victim", "empty")
	att := bgClientsFor(t, h, "root:bg-attacker")
	children := att.dyn.Resource(workspacesGVR)

	if err := parallel(heldChildren, func(i int) error {
		_, err := children.Create(ctx, newWorkspace(fmt.Sprintf("held-%d", i)), metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatalf("creating the attacker's workspaces: %v", err)
	}
	// A ConfigMap with a finalizer nobody removes holds each deletion.
	if err := parallel(heldChildren, func(i int) error {
		c := bgClientsFor(t, h, fmt.Sprintf("root:bg-attacker:held-%d", i))
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}
		var err error
		for try := 0; try < 100; try++ {
			if _, err = c.kube.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err == nil || apierrors.IsAlreadyExists(err) {
				return nil
			}
			time.Sleep(100 * time.Millisecond) // the workspace is still being set up
		}
		return err
	}); err != nil {
		t.Fatalf("creating the held content: %v", err)
	}

	// The attack: every child deleted at once.
	if err := parallel(heldChildren, func(i int) error {
		return children.Delete(ctx, fmt.Sprintf("held-%d", i), metav1.DeleteOptions{})
	}); err != nil {
		t.Fatalf("deleting the attacker's workspaces: %v", err)
	}
	list, err := children.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := contentReported(list)
	if len(list.Items) != heldChildren || before > heldChildren/2 {
		t.Fatalf("the attack built no backlog: %d held workspaces, %d already looked at", len(list.Items), before)
	}

	// The victim deletes an empty workspace of her own.
	vic := bgClientsFor(t, h, "root:bg-victim").dyn.Resource(workspacesGVR)
	if err := vic.Delete(ctx, "empty", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("victim's delete: %v", err)
	}
	waitDeleted(t, func() error {
		_, err := vic.Get(ctx, "empty", metav1.GetOptions{})
		return err
	})
	list, err = children.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after := contentReported(list)
	t.Logf("attacker's held deletions looked at: %d when the victim deleted, %d when her deletion completed (of %d)", before, after, len(list.Items))
	if after >= len(list.Items) {
		t.Fatalf("the victim's deletion completed only after the deletion controller got through all %d of the attacker's held deletions", len(list.Items))
	}
}

// waitDeleted polls get (a Get of the object) until it answers 404.
func waitDeleted(t *testing.T, get func() error) {
	t.Helper()
	eventually(t, 3*time.Minute, func() error {
		err := get()
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("still there")
	})
}

// TestAttackLimitsBackgroundB7: an attacker's orphans ConfigMaps lose
// their owner at once; right after, a victim of another tenant deletes
// the owner of one ConfigMap. The collector collects the victim's
// dependent while most of the attacker's orphans are still there (with
// the FIFO queue it came after all of them).
func TestAttackLimitsBackgroundB7(t *testing.T) {
	t.Parallel()
	const orphans = 1000
	ctx := context.Background()
	h := startHub(t, hubOptions{})
	h.createWorkspace("root", "gc-attacker")
	h.createWorkspace("root", "gc-victim")
	att := bgClientsFor(t, h, "root:gc-attacker").kube.CoreV1().ConfigMaps("default")
	vic := bgClientsFor(t, h, "root:gc-victim").kube.CoreV1().ConfigMaps("default")

	ownedBy := func(o *corev1.ConfigMap) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: o.Name, UID: o.UID}}
	}
	owner, err := att.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := parallel(orphans, func(i int) error {
		_, err := att.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("dep-%d", i), Labels: map[string]string{"role": "dep"}, OwnerReferences: ownedBy(owner)}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatalf("creating the attacker's dependents: %v", err)
	}
	vOwner, err := vic.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vDep, err := vic.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: ownedBy(vOwner)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := vic.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "dependent").String(),
		ResourceVersion: vDep.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// The attack: the owner of every dependent goes, then the victim's
	// owner. The collector hears of both in this order (one informer).
	if err := att.Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := vic.Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	timeout := time.NewTimer(3 * time.Minute)
	defer timeout.Stop()
	for deleted := false; !deleted; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch of the victim's dependent ended")
			}
			deleted = ev.Type == watch.Deleted
		case <-timeout.C:
			t.Fatal("the victim's dependent was never collected")
		}
	}
	left, err := att.List(ctx, metav1.ListOptions{LabelSelector: "role=dep"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("attacker's orphans left when the victim's dependent was collected: %d of %d", len(left.Items), orphans)
	if len(left.Items) < orphans/2 {
		t.Fatalf("the victim's dependent was collected only after %d of the attacker's %d orphans", orphans-len(left.Items), orphans)
	}
	// And the attacker's are collected too, in their own turns.
	eventually(t, 3*time.Minute, func() error {
		l, err := att.List(ctx, metav1.ListOptions{LabelSelector: "role=dep"})
		if err != nil {
			return err
		}
		if len(l.Items) > 0 {
			return fmt.Errorf("%d orphans left", len(l.Items))
		}
		return nil
	})
}
