package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wharfhub/wharf/sdk/clusters"
)

// TestClusterAwareInformer (issue 12 item 9): an sdk/clusters informer on
// /clusters/* keeps same-named objects of two workspaces apart, where a
// plain client-go informer on the same list and watch collapses them into
// one; updates and deletes reach the right entry; ForCluster writes land in
// the named workspace only. The hello sample's controller, built on both,
// answers the Greeting of each workspace that enabled it.
func TestClusterAwareInformer(t *testing.T) {
	t.Parallel()
	hello := providerBinary(t, "./sdk/examples/hello", "hello")
	h := startHub(t, hubOptions{extraArgs: []string{"--provider", "hello=" + hello}})
	a := h.createWorkspace("root", "inf-a")
	b := h.createWorkspace("root", "inf-b")
	for _, ws := range []string{"root:inf-a", "root:inf-b"} {
		h.mustKubectl(ws, "create", "configmap", "same", "-n", "default", "--from-literal=ws="+ws)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", h.Kubecfg)
	if err != nil {
		t.Fatal(err)
	}
	wild, err := clusters.Wildcard(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(wild)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().ConfigMaps("").List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.CoreV1().ConfigMaps("").Watch(ctx, o)
		},
	}
	var mu sync.Mutex
	deleted := map[string]bool{}
	inf, err := clusters.NewInformer(clusters.InformerOptions{ListerWatcher: lw, ObjectType: &corev1.ConfigMap{},
		Handler: cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj interface{}) {
			k, _ := clusters.Key(obj)
			mu.Lock()
			deleted[k] = true
			mu.Unlock()
		}}})
	if err != nil {
		t.Fatal(err)
	}
	plain := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.Run(ctx)
	go plain.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced, plain.HasSynced) {
		t.Fatal("informers did not sync")
	}
	l := inf.Lister()
	data := func(cluster string) string {
		o, ok, err := l.Get(cluster, "default", "same")
		if err != nil || !ok {
			return fmt.Sprintf("<missing: %v>", err)
		}
		return o.(*corev1.ConfigMap).Data["ws"]
	}
	if da, db := data(a), data(b); da != "root:inf-a" || db != "root:inf-b" {
		t.Errorf("cluster-aware cache: a=%q b=%q (clusters a=%s b=%s, cached %v)", da, db, a, b, l.Clusters())
	}
	// The problem being solved: client-go's own key is namespace/name.
	if _, ok, _ := plain.GetStore().GetByKey("default/same"); !ok {
		t.Error("plain informer has no default/same at all")
	}
	n := 0
	for _, o := range plain.GetStore().List() {
		if o.(*corev1.ConfigMap).Name == "same" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("plain informer kept %d entries for default/same; the collapse this package fixes did not happen", n)
	}

	// A write through ForCluster lands in that workspace only, and the
	// informer updates that entry only.
	inA, err := clusters.ForCluster(cfg, a)
	if err != nil {
		t.Fatal(err)
	}
	csA := kubernetes.NewForConfigOrDie(inA)
	cmA, err := csA.CoreV1().ConfigMaps("default").Get(ctx, "same", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cmA.Data["ws"] = "changed-in-a"
	if _, err := csA.CoreV1().ConfigMaps("default").Update(ctx, cmA, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if da, db := data(a), data(b); da != "changed-in-a" || db != "root:inf-b" {
			return fmt.Errorf("after update: a=%q b=%q", da, db)
		}
		return nil
	})
	if got := h.mustKubectl("root:inf-b", "get", "configmap", "same", "-n", "default", "-o", "jsonpath={.data.ws}"); got != "root:inf-b" {
		t.Errorf("write through ForCluster(a) changed b: %q", got)
	}
	h.mustKubectl("root:inf-b", "delete", "configmap", "same", "-n", "default")
	eventually(t, 30*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if !deleted[clusters.ToKey(b, "default", "same")] {
			return fmt.Errorf("no delete event for b's object: %v", deleted)
		}
		return nil
	})
	if got := data(a); got != "changed-in-a" {
		t.Errorf("deleting b's object lost a's: %q", got)
	}

	// The hello sample: one controller, two workspaces, same name.
	for ws, msg := range map[string]string{"root:inf-a": "from a", "root:inf-b": "from b"} {
		h.mustApply(ws, "apiVersion: providers.wharf.dev/v1alpha1\nkind: ProviderBinding\nmetadata:\n  name: hello\nspec:\n  provider: hello\n", "create")
		eventually(t, 60*time.Second, func() error {
			out, err := h.applyStdin(ws, "apiVersion: hello.wharf.dev/v1alpha1\nkind: Greeting\nmetadata:\n  name: g\n  namespace: default\nspec:\n  message: "+msg+"\n", "apply")
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		})
	}
	for ws, want := range map[string]string{"root:inf-a": "Hello, from a", "root:inf-b": "Hello, from b"} {
		eventually(t, 60*time.Second, func() error {
			if got, _ := h.kubectl(ws, "get", "greeting", "g", "-n", "default", "-o", "jsonpath={.status.reply}"); got != want {
				return fmt.Errorf("%s: reply %q, want %q", ws, got, want)
			}
			return nil
		})
		req, _ := http.NewRequest(http.MethodGet, h.URL+"/services/providers/hello/greetings", nil)
		req.Header.Set("Authorization", "Bearer "+h.Token)
		req.Header.Set("X-Wharf-Workspace", ws)
		resp, err := h.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var got []struct{ Name, Message, Reply string }
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil || len(got) != 1 || got[0].Reply != want {
			t.Errorf("GET /greetings in %s = %d %+v %v; want one greeting replying %q", ws, resp.StatusCode, got, err, want)
		}
	}
	if out := h.mustKubectl("root:inf-a", "get", "greetings", "-n", "default"); !strings.Contains(out, "REPLY") {
		t.Errorf("greetings columns: %s", out)
	}
}
