package server

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/wharfhub/wharf/hub/resourcequota"
)

// resourceQuotaResync is how often every ResourceQuota is recounted
// besides the recounts that writes and deletes trigger.
const resourceQuotaResync = 5 * time.Minute

// newResourceQuotaAdmission is the admission plugin of workspaces'
// ResourceQuotas (hub/resourcequota); it gets the storage once built.
func newResourceQuotaAdmission(x *ExtraConfig) *resourcequota.Admission {
	return resourcequota.NewAdmission(&resourcequota.Counter{Client: x.EtcdClient, Prefix: x.EtcdPrefix})
}

// installResourceQuota hands the plugin the ResourceQuota storage and
// returns the controller recounting status.used.
func (h *Hub) installResourceQuota(builtin map[schema.GroupVersion]map[string]rest.Storage) ([]background, error) {
	core := builtin[corev1.SchemeGroupVersion]
	main, okMain := core["resourcequotas"].(rest.StandardStorage)
	status, okStatus := core["resourcequotas/status"].(rest.Updater)
	if !okMain || !okStatus {
		return nil, fmt.Errorf("resourcequotas storage is not served")
	}
	a := h.Extra.ResourceQuota
	a.SetQuotas(resourcequota.Quotas{List: main, Status: status})
	c := &resourcequota.Controller{Counter: a.Counter, Get: main, Status: status, Interval: resourceQuotaResync,
		TenantOf: clusterTenants(h.Extra.Index)}
	return []background{{name: "wharf-resourcequota-controller", run: func(ctx context.Context) { c.Run(ctx) }}}, nil
}
