package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

var workspaceGVR = schema.GroupVersionResource{Group: "tenancy.wharf.dev", Version: "v1alpha1", Resource: "workspaces"}

// runPool runs fn(i) for i in [0,n) on workers goroutines. It stops handing
// out work at the first error or when ctx ends, waits for every worker and
// returns that first error.
func runPool(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan int)
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := fn(ctx, i); err != nil {
					once.Do(func() { firstErr = err; cancel() })
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil && n > 0 {
		return fmt.Errorf("pool: %w", err)
	}
	return nil
}

// boundWorkspaces creates children root:<prefix>-<i> for i in [0,n) on
// workers goroutines; in each it waits until namespace default is served and
// binds alice to ClusterRole view with a ClusterRoleBinding. It returns the
// workspace paths.
func boundWorkspaces(ctx context.Context, h *hubProc, prefix string, n, workers int) ([]string, error) {
	dyn, err := dynamic.NewForConfig(h.config("root"))
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	paths := make([]string, n)
	err = runPool(ctx, n, workers, func(ctx context.Context, i int) error {
		name := fmt.Sprintf("%s-%d", prefix, i)
		ws := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "tenancy.wharf.dev/v1alpha1",
			"kind":       "Workspace",
			"metadata":   map[string]any{"name": name},
		}}
		if _, err := dyn.Resource(workspaceGVR).Create(ctx, ws, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create workspace %s: %w", name, err)
		}
		paths[i] = "root:" + name
		cs, err := kubernetes.NewForConfig(h.config(paths[i]))
		if err != nil {
			return fmt.Errorf("clientset for %s: %w", paths[i], err)
		}
		if err := waitDefaultNamespace(ctx, cs, paths[i]); err != nil {
			return err
		}
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "alice-view"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("bind alice in %s: %w", paths[i], err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return paths, nil
}

// waitDefaultNamespace polls until the workspace serves namespace default.
func waitDefaultNamespace(ctx context.Context, cs kubernetes.Interface, ws string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("workspace %s: default namespace not served: %w (last: %v)", ws, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// createTarget creates ConfigMap default/bench in ws and returns its URL
// path below the hub URL.
func createTarget(ctx context.Context, h *hubProc, ws string) (string, error) {
	cs, err := kubernetes.NewForConfig(h.config(ws))
	if err != nil {
		return "", fmt.Errorf("clientset for %s: %w", ws, err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Data:       map[string]string{"payload": "wharf rbac benchmark"},
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create configmap in %s: %w", ws, err)
	}
	return "/clusters/" + ws + "/api/v1/namespaces/default/configmaps/bench", nil
}
