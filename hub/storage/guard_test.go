package storage_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/component-base/metrics/testutil"

	"github.com/wharfhub/wharf/hub/cluster"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// badValue is a stored value the hub did not write and cannot serve.
type badValue struct {
	name, reason string
	key          string // below /registry
	value        string
}

func cmJSON(name, annotations string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default","annotations":{%s}},"data":{"v":"planted"}}`, name, annotations)
}

func annotated(id cluster.ID) string { return fmt.Sprintf(`%q:%q`, wstorage.ClusterAnnotation, id) }

var badValues = []badValue{
	{name: "no cluster annotation", reason: "no-cluster-annotation",
		key: "/core/configmaps/" + string(clusterA) + "/default/bare", value: cmJSON("bare", "")},
	{name: "annotation names another cluster", reason: "key-mismatch",
		key: "/core/configmaps/" + string(clusterA) + "/default/moved", value: cmJSON("moved", annotated(clusterB))},
	{name: "name differs from key", reason: "key-mismatch",
		key: "/core/configmaps/" + string(clusterA) + "/default/alias", value: cmJSON("victim", annotated(clusterA))},
	{name: "no cluster segment", reason: "key-mismatch",
		key: "/core/configmaps/loose", value: cmJSON("loose", annotated(clusterA))},
	{name: "does not decode", reason: "undecodable",
		key: "/core/configmaps/" + string(clusterA) + "/default/garbage", value: "\x00not an object"},
	{name: "encrypted with an unknown key", reason: "untransformable",
		key: "/core/configmaps/" + string(clusterA) + "/default/sealed", value: "k8s:enc:aescbc:v1:key1:xxxx"},
	{name: "forged quarantine marker", reason: "forged-quarantine-marker",
		key:   "/core/configmaps/" + string(clusterA) + "/default/marker",
		value: cmJSON("marker", annotated(clusterA)+fmt.Sprintf(`,%q:%q`, wstorage.QuarantineAnnotation, "/core/configmaps/"+string(clusterB)+"/default/good"))},
}

func putBad(t *testing.T, c *clientv3.Client, bad []badValue) {
	t.Helper()
	for _, b := range bad {
		if _, err := c.Put(context.Background(), "/registry"+b.key, b.value); err != nil {
			t.Fatal(err)
		}
	}
}

func skipped(t *testing.T, reason string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(wstorage.SkippedObjects.WithLabelValues("configmaps", reason))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func names(t *testing.T, obj runtime.Object) []string {
	t.Helper()
	var out []string
	for _, cm := range obj.(*corev1.ConfigMapList).Items {
		out = append(out, cm.Annotations[wstorage.ClusterAnnotation]+"/"+cm.Name)
	}
	return out
}

// Values under a resource's prefix that the hub did not write (an external
// etcd, old data, etcdctl) must not take the resource down: the watch cache
// starts over them, every cluster keeps working, they are never served,
// and each is counted by reason (issue 11, finding 10).
func TestStartsOverUnservableValues(t *testing.T) {
	etcd := testserver.RunEtcd(t, nil)
	before := map[string]float64{}
	for _, b := range badValues {
		before[b.reason] = skipped(t, b.reason)
	}
	putBad(t, etcd.Client, badValues)

	// A "restart": a fresh watch cache lists the prefix. newStoreOn fails
	// the test unless the cache becomes ready.
	store := newConfigMapStoreOn(t, etcd.Endpoints())
	for _, id := range []cluster.ID{clusterA, clusterB} {
		if _, err := store.Create(ctxFor(id), configMap("good", string(id), ""), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
			t.Fatalf("create in %s: %v", id, err)
		}
	}
	for _, b := range badValues {
		if got := skipped(t, b.reason); got <= before[b.reason] {
			t.Errorf("%s: wharf_storage_skipped_objects_total{reason=%q} = %v, want > %v", b.name, b.reason, got, before[b.reason])
		}
	}

	// Lists (cached and consistent) hold only the hub's own objects.
	wildcard := cluster.WithWildcard(request.WithNamespace(context.Background(), ""))
	for name, ctx := range map[string]context.Context{"cluster A": ctxFor(clusterA), "cluster B": ctxFor(clusterB), "wildcard": wildcard} {
		eventuallyList(t, store, ctx, func(got []string) error {
			want := map[string]int{"cluster A": 1, "cluster B": 1, "wildcard": 2}[name]
			if len(got) != want {
				return fmt.Errorf("%s lists %v, want %d good objects", name, got, want)
			}
			for _, n := range got {
				if n != string(clusterA)+"/good" && n != string(clusterB)+"/good" {
					return fmt.Errorf("%s lists %v", name, got)
				}
			}
			return nil
		})
	}

	// A bad key answers one 500 for every reason; it cannot be
	// overwritten through the API either, only repaired in etcd.
	for _, name := range []string{"bare", "moved", "alias", "garbage", "sealed", "marker"} {
		_, err := store.Get(ctxFor(clusterA), name, &metav1.GetOptions{})
		if !apierrors.IsInternalError(err) {
			t.Errorf("get %s: %v, want an internal error", name, err)
		}
		_, _, err = store.Update(ctxFor(clusterA), name, rest.DefaultUpdatedObjectInfo(configMap(name, "overwrite", "")),
			rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, true, &metav1.UpdateOptions{})
		if se, ok := err.(apierrors.APIStatus); !ok || se.Status().Code != http.StatusInternalServerError {
			t.Errorf("update %s: %v, want an internal error", name, err)
		}
	}
	// The forged marker poisoned nothing: B's object at the key it named
	// is still served.
	if _, err := store.Get(ctxFor(clusterB), "good", &metav1.GetOptions{}); err != nil {
		t.Errorf("B's object named by the forged marker: %v", err)
	}

	// The same values arriving while the cache runs (watch events) do not
	// stop it either: later writes still show up.
	late := make([]badValue, len(badValues))
	for i, b := range badValues {
		late[i] = b
		late[i].key += "-late"
	}
	putBad(t, etcd.Client, late)
	if _, err := store.Create(ctxFor(clusterA), configMap("after", "a", ""), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventuallyList(t, store, ctxFor(clusterA), func(got []string) error {
		if len(got) != 2 {
			return fmt.Errorf("cluster A lists %v, want good and after", got)
		}
		return nil
	})
}

// A client cannot plant the quarantine marker: it is stripped on create
// and update, so the object is stored and served normally.
func TestQuarantineMarkerStrippedOnWrite(t *testing.T) {
	store, _ := newConfigMapStore(t)
	cm := configMap("m", "v", "")
	cm.Annotations = map[string]string{wstorage.QuarantineAnnotation: "/core/configmaps/" + string(clusterB) + "/default/x"}
	if _, err := store.Create(ctxFor(clusterA), cm, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := store.Get(ctxFor(clusterA), "m", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := got.(*corev1.ConfigMap).Annotations; a[wstorage.QuarantineAnnotation] != "" || a[wstorage.ClusterAnnotation] != string(clusterA) {
		t.Errorf("stored annotations %v", a)
	}
}

// eventuallyList polls a list until check passes; the watch cache applies
// writes asynchronously. The bound only stops a broken test.
func eventuallyList(t *testing.T, store interface {
	List(context.Context, *metainternalversion.ListOptions) (runtime.Object, error)
}, ctx context.Context, check func([]string) error) {
	t.Helper()
	var last error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		obj, err := store.List(ctx, nil)
		if err != nil {
			last = err
			continue
		}
		if last = check(names(t, obj)); last == nil {
			return
		}
	}
	t.Fatal(last)
}
