package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

var workspaceGVR = schema.GroupVersionResource{Group: "tenancy.wharf.dev", Version: "v1alpha1", Resource: "workspaces"}

// payload is the data of every benchmark ConfigMap: a few hundred bytes.
var payload = map[string]string{
	"a": strings.Repeat("x", 128),
	"b": strings.Repeat("y", 128),
	"c": "wharf hub benchmark payload",
}

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

// createWorkspaces creates children root:<prefix>-<i> for i in [0,n), then
// waits until each serves its default namespace, and returns their paths.
func createWorkspaces(ctx context.Context, h *hubProc, prefix string, n, workers int) ([]string, error) {
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
		return waitDefaultNamespace(ctx, h, paths[i])
	})
	if err != nil {
		return nil, err
	}
	return paths, nil
}

// waitDefaultNamespace polls until the workspace serves namespace default,
// so that ConfigMap create latencies do not include workspace set-up.
func waitDefaultNamespace(ctx context.Context, h *hubProc, ws string) error {
	cs, err := kubernetes.NewForConfig(h.config(ws))
	if err != nil {
		return fmt.Errorf("clientset for %s: %w", ws, err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("workspace %s: default namespace not served: %w", ws, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// createConfigMaps creates perWS ConfigMaps in namespace default of every
// workspace in wss, on workers goroutines, and records each create's latency.
func createConfigMaps(ctx context.Context, h *hubProc, wss []string, perWS, workers int, rec *recorder) error {
	clients := make([]kubernetes.Interface, len(wss))
	for i, ws := range wss {
		cs, err := kubernetes.NewForConfig(h.config(ws))
		if err != nil {
			return fmt.Errorf("clientset for %s: %w", ws, err)
		}
		clients[i] = cs
	}
	// Interleave workspaces so concurrent creates hit different workspaces,
	// as independent tenants would.
	return runPool(ctx, len(wss)*perWS, workers, func(ctx context.Context, i int) error {
		w, j := i%len(wss), i/len(wss)
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%06d", j), Labels: map[string]string{"bench": "wharf"}},
			Data:       payload,
		}
		start := time.Now()
		_, err := clients[w].CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create configmap %s/%s: %w", wss[w], cm.Name, err)
		}
		rec.add(time.Since(start))
		return nil
	})
}
