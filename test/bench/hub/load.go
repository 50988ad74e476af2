package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// payload is the data of every benchmark ConfigMap: a few hundred bytes.
var payload = map[string]string{
	"a": strings.Repeat("x", 128),
	"b": strings.Repeat("y", 128),
	"c": "wharf hub benchmark payload",
}

// createWorkspaces creates children root:<prefix>-<i> for i in [0,n), then
// waits until each serves its default namespace, and returns their paths.
func createWorkspaces(ctx context.Context, h *benchkit.Hub, prefix string, n, workers int) ([]string, error) {
	return benchkit.CreateWorkspaces(ctx, h, prefix, n, workers, nil)
}

// createConfigMaps creates perWS ConfigMaps in namespace default of every
// workspace in wss, on workers goroutines, and records each create's latency.
func createConfigMaps(ctx context.Context, h *benchkit.Hub, wss []string, perWS, workers int, rec *benchkit.Recorder) error {
	clients := make([]kubernetes.Interface, len(wss))
	for i, ws := range wss {
		cs, err := kubernetes.NewForConfig(h.Config(ws))
		if err != nil {
			return fmt.Errorf("clientset for %s: %w", ws, err)
		}
		clients[i] = cs
	}
	// Interleave workspaces so concurrent creates hit different workspaces,
	// as independent tenants would.
	return benchkit.Pool(ctx, len(wss)*perWS, workers, func(ctx context.Context, i int) error {
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
		rec.Add(time.Since(start))
		return nil
	})
}
