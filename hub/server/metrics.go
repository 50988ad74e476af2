package server

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/plugins"
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

var (
	providerUp = compbasemetrics.NewGaugeVec(&compbasemetrics.GaugeOpts{
		Name:           "wharf_provider_up",
		Help:           "1 while a provider plugin is running, 0 otherwise.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"provider"})
	providerRestarts = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Name:           "wharf_provider_restarts_total",
		Help:           "Times a provider plugin was relaunched after a crash, failed health checks or a failed start.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"provider"})
	providerLeaseLosses = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Name:           "wharf_provider_lease_losses_total",
		Help:           "Times this replica stopped a replicas: single provider because it lost its Lease (a renewal missed its deadline, or another replica took it).",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"provider"})
)

func init() {
	legacyregistry.MustRegister(providerUp, providerRestarts, providerLeaseLosses)
}

// runProviderMetrics mirrors the plugin host's status into the metrics.
// The host keeps a cumulative restart count per provider; the counter is
// advanced by what it grew since the last look, so it starts at zero with
// the hub process like any Prometheus counter.
func runProviderMetrics(ctx context.Context, h *plugins.Host) {
	changes := h.Subscribe(ctx)
	seen, lost := map[string]int{}, map[string]int{}
	for {
		for _, st := range h.List() {
			up := 0.0
			if st.State == plugins.StateRunning {
				up = 1
			}
			providerUp.WithLabelValues(st.Name).Set(up)
			restarts := providerRestarts.WithLabelValues(st.Name) // exported from 0
			if d := st.Restarts - seen[st.Name]; d > 0 {
				restarts.Add(float64(d))
				seen[st.Name] = st.Restarts
			}
			losses := providerLeaseLosses.WithLabelValues(st.Name) // exported from 0
			if d := st.LeaseLosses - lost[st.Name]; d > 0 {
				losses.Add(float64(d))
				lost[st.Name] = st.LeaseLosses
			}
		}
		if _, ok := <-changes; !ok {
			return
		}
	}
}
