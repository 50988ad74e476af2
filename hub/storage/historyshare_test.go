package storage_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/registry/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wharfhub/wharf/hub/cluster"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// A tenant rewriting one large object (outside review 3, C-C) uses up her
// share of the history (a quarter of the bound) and her large writes get
// 429, before the history reaches the bound and relists for everybody;
// her small writes and another tenant's large ones go through. Real
// etcd, the real watch cache.
func TestHistoryShareRefusesTheRewritingTenant(t *testing.T) {
	const (
		bound = 4 << 20
		size  = 300 << 10
	)
	shares := wstorage.NewHistoryShares(bound)
	clk := clocktesting.NewFakeClock(time.Now())
	store := newBoundedStore(t, clk, wstorage.HistoryLimit{Bytes: bound, Grace: time.Second, MinInterval: time.Minute, Shares: shares})
	tenants := map[cluster.ID]string{clusterA: "root:users:mallory", clusterB: "root:users:victor"}
	adm := wstorage.NewHistoryAdmission(shares, nil, func(_ context.Context, id cluster.ID) string { return tenants[id] })
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	u := &user.DefaultInfo{Name: "someone"}
	check := func(id cluster.ID, obj, old *corev1.ConfigMap) error {
		op := admission.Create
		if old != nil {
			op = admission.Update
		}
		attrs := admission.NewAttributesRecord(obj, nil, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "default", obj.Name, gvr, "", op, nil, false, u)
		if old != nil {
			attrs = admission.NewAttributesRecord(obj, old, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "default", obj.Name, gvr, "", op, nil, false, u)
		}
		return adm.Validate(ctxFor(id), attrs, nil)
	}
	big := func(name, v string) *corev1.ConfigMap { return configMap(name, strings.Repeat(v, size), "") }
	for _, id := range []cluster.ID{clusterA, clusterB} {
		if err := check(id, big("big", "a"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Create(ctxFor(id), big("big", "a"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// mallory rewrites her object until refused; each rewrite is let
	// the cache see it first, so the count does not depend on timing.
	w := readyWatch(t, store)
	defer w.Stop()
	rewrites := 0
	for ; rewrites < 40; rewrites++ {
		old := big("big", string(rune('a'+rewrites%26)))
		next := big("big", string(rune('b'+rewrites%25)))
		err := check(clusterA, next, old)
		if err != nil {
			if !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "share of the hub's watch cache history") {
				t.Fatalf("refusal %v, want 429 naming the history", err)
			}
			break
		}
		cur, err := store.Get(ctxFor(clusterA), "big", &metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm := cur.(*corev1.ConfigMap).DeepCopy()
		cm.Data = next.Data
		if _, _, err := store.Update(ctxFor(clusterA), "big", rest.DefaultUpdatedObjectInfo(cm), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, func() error {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatal("the cache closed its watch: it relisted")
				}
				if ev.Type == "MODIFIED" {
					return nil
				}
			default:
			}
			return fmt.Errorf("no event yet")
		})
	}
	// A quarter of 4 MiB holds three 300 kB copies; the fourth is refused.
	if rewrites != 3 {
		t.Fatalf("mallory made %d rewrites before the refusal, want 3", rewrites)
	}
	if err := check(clusterA, configMap("small", "x", ""), nil); err != nil {
		t.Errorf("her small write refused: %v", err)
	}
	if err := check(clusterB, big("big", "c"), big("big", "a")); err != nil {
		t.Errorf("victor's large write refused: %v", err)
	}
	if err := check(clusterA, big("big", "c"), big("big", "a")); err != nil && !apierrors.IsTooManyRequests(err) {
		t.Fatal(err)
	}
	if err := adm.Validate(ctxFor(clusterA), admission.NewAttributesRecord(big("big", "c"), big("big", "a"), corev1.SchemeGroupVersion.WithKind("ConfigMap"), "default", "big", gvr, "", admission.Update, nil, false,
		&user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}}), nil); err != nil {
		t.Errorf("system:masters refused: %v", err)
	}
}
