package server

import (
	"context"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/fairness"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// historyShareTable is the hub's one table of tenants' shares of the
// watch cache histories (hub/storage historyshare.go), shared by the
// built-in and the custom resources' stores and by the admission plugin
// that refuses a tenant's large writes once her share is used. Nil when
// --watch-cache-history-bytes is 0.
func (o *Options) historyShareTable() *wstorage.HistoryShares {
	if o.historyShares == nil {
		o.historyShares = wstorage.NewHistoryShares(o.WatchCacheHistoryBytes)
	}
	return o.historyShares
}

// cacheProgressTable is the hub's one table of how far each watch cache
// has read etcd; the store monitor compacts up to it.
func (o *Options) cacheProgressTable() *wstorage.CacheProgress {
	if o.cacheProgress == nil {
		o.cacheProgress = wstorage.NewCacheProgress()
	}
	return o.cacheProgress
}

// historyAdmission is that plugin; a workspace's tenant is its tree, as
// hub/fairness and hub/quota name it.
func (o *Options) historyAdmission(extra *ExtraConfig) admission.ValidationInterface {
	a := admins{users: sets.New(o.AdminUsers...), groups: sets.New(o.AdminGroups...)}
	return wstorage.NewHistoryAdmission(o.historyShareTable(), a.has, func(ctx context.Context, id cluster.ID) string {
		p, err := extra.Index.PathOf(ctx, id)
		if err != nil || p == "" {
			return ""
		}
		return string(fairness.TreeOf(p))
	})
}
