package server

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/workspaces"
)

// workspacesGauge counts workspaces by phase. Root has no Workspace object
// and is counted as Ready.
var workspacesGauge = compbasemetrics.NewGaugeVec(&compbasemetrics.GaugeOpts{
	Name:           "wharf_workspaces",
	Help:           "Number of workspaces by phase, root included.",
	StabilityLevel: compbasemetrics.ALPHA,
}, []string{"phase"})

func init() {
	// legacyregistry is the registry the apiserver's /metrics serves.
	legacyregistry.MustRegister(workspacesGauge)
}

// runWorkspaceMetrics refreshes the gauge from the controller's informer.
func runWorkspaceMetrics(ctx context.Context, store cache.Store, _ *workspaces.Index) {
	wait.UntilWithContext(ctx, func(context.Context) {
		counts := map[string]float64{string(tenancyv1alpha1.WorkspacePhaseReady): 1, string(tenancyv1alpha1.WorkspacePhaseTerminating): 0}
		for _, obj := range store.List() {
			ws := obj.(*tenancyv1alpha1.Workspace)
			phase := string(ws.Status.Phase)
			if ws.DeletionTimestamp != nil {
				phase = string(tenancyv1alpha1.WorkspacePhaseTerminating)
			}
			counts[phase]++
		}
		for phase, n := range counts {
			workspacesGauge.WithLabelValues(phase).Set(n)
		}
	}, 5*time.Second)
}
