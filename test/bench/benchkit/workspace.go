package benchkit

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// WorkspaceGVR is the resource of wharf workspaces.
var WorkspaceGVR = schema.GroupVersionResource{Group: "tenancy.wharf.dev", Version: "v1alpha1", Resource: "workspaces"}

// CreateWorkspace creates workspace name with dyn, a dynamic client for
// root, and returns its path root:<name>. It does not wait for it to serve.
func CreateWorkspace(ctx context.Context, dyn dynamic.Interface, name string) (string, error) {
	ws := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "tenancy.wharf.dev/v1alpha1",
		"kind":       "Workspace",
		"metadata":   map[string]any{"name": name},
	}}
	if _, err := dyn.Resource(WorkspaceGVR).Create(ctx, ws, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create workspace %s: %w", name, err)
	}
	return "root:" + name, nil
}

// CreateWorkspaces creates children root:<prefix>-<i> of root for i in
// [0,n) on workers goroutines (see Pool). In each it waits until namespace
// default is served and then, if then is not nil, calls then with a
// clientset for the workspace. It returns the workspace paths.
func CreateWorkspaces(ctx context.Context, h *Hub, prefix string, n, workers int, then func(ctx context.Context, cs kubernetes.Interface, path string) error) ([]string, error) {
	dyn, err := dynamic.NewForConfig(h.Config("root"))
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	paths := make([]string, n)
	err = Pool(ctx, n, workers, func(ctx context.Context, i int) error {
		path, err := CreateWorkspace(ctx, dyn, fmt.Sprintf("%s-%d", prefix, i))
		if err != nil {
			return err
		}
		paths[i] = path
		cs, err := kubernetes.NewForConfig(h.Config(path))
		if err != nil {
			return fmt.Errorf("clientset for %s: %w", path, err)
		}
		if err := WaitDefaultNamespace(ctx, cs, path); err != nil {
			return err
		}
		if then == nil {
			return nil
		}
		return then(ctx, cs, path)
	})
	if err != nil {
		return nil, err
	}
	return paths, nil
}

// WaitDefaultNamespace polls with cs, a clientset for workspace ws, for up
// to a minute until the workspace serves namespace default.
func WaitDefaultNamespace(ctx context.Context, cs kubernetes.Interface, ws string) error {
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
