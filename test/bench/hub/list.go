package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// listResult holds the latencies of repeated lists of one workspace.
type listResult struct {
	full      benchkit.Summary // one unpaged list
	paged     benchkit.Summary // a whole traversal in pages of pageSize
	firstPage benchkit.Summary // the first page of each traversal
}

const pageSize = 500

// measureList lists namespace default's ConfigMaps in ws iterations times,
// unpaged and paged, and checks that each list returns want items.
func measureList(ctx context.Context, h *benchkit.Hub, ws string, iterations, want int) (listResult, error) {
	cs, err := kubernetes.NewForConfig(h.Config(ws))
	if err != nil {
		return listResult{}, fmt.Errorf("clientset for %s: %w", ws, err)
	}
	cms := cs.CoreV1().ConfigMaps("default")
	var full, paged, first benchkit.Recorder
	// One warm-up of each kind, not recorded.
	for i := -1; i < iterations; i++ {
		start := time.Now()
		l, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			return listResult{}, fmt.Errorf("list %s: %w", ws, err)
		}
		if len(l.Items) != want {
			return listResult{}, fmt.Errorf("list %s: got %d configmaps, want %d", ws, len(l.Items), want)
		}
		if i >= 0 {
			full.Add(time.Since(start))
		}

		start = time.Now()
		opts := metav1.ListOptions{Limit: pageSize}
		got := 0
		for page := 0; ; page++ {
			l, err := cms.List(ctx, opts)
			if err != nil {
				return listResult{}, fmt.Errorf("paged list %s: %w", ws, err)
			}
			if page == 0 && i >= 0 {
				first.Add(time.Since(start))
			}
			got += len(l.Items)
			if l.Continue == "" {
				break
			}
			opts.Continue = l.Continue
		}
		if got != want {
			return listResult{}, fmt.Errorf("paged list %s: got %d configmaps, want %d", ws, got, want)
		}
		if i >= 0 {
			paged.Add(time.Since(start))
		}
	}
	return listResult{full: full.Summarize(), paged: paged.Summarize(), firstPage: first.Summarize()}, nil
}
