package server

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/hub/storecap"
)

// newStoreMonitor prepares the store monitor (hub/storecap): the embedded
// etcd's quota is the one it was started with; an external cluster's is
// read from its members.
func (o *Options) newStoreMonitor(ctx context.Context, extra *ExtraConfig) *storecap.Monitor {
	cfg := storecap.Config{
		Client:    extra.EtcdClient,
		Endpoints: o.Etcd.StorageConfig.Transport.ServerList,
		HighWater: o.Store.HighWater,
		Interval:  o.Store.PollInterval,
		Defrag:    o.Store.DefragExternal,
		Clock:     clock.RealClock{},
		// Compactions for rewrites stop where a watch cache is.
		SafeRevision: o.cacheProgressTable().Safe,
	}
	if extra.Embedded != nil {
		cfg.Quota, cfg.Defrag = extra.Embedded.QuotaBytes, true
	} else {
		cfg.Quota = storecap.ExternalQuota(ctx, o.Etcd.StorageConfig.Transport, o.Store.QuotaBytes)
	}
	return storecap.New(cfg)
}

// storeAdmission refuses non-admin writes above the high-water mark.
func (o *Options) storeAdmission(m *storecap.Monitor) admission.ValidationInterface {
	a := admins{users: sets.New(o.AdminUsers...), groups: sets.New(o.AdminGroups...)}
	return storecap.NewAdmission(m, a.has)
}

// storeMonitorBackground runs the monitor; its crossings are recorded as
// Events in root's default namespace, about that namespace (the store is
// hub-wide; root is where hub admins look).
func (h *Hub) storeMonitorBackground() background {
	rec := h.Extra.Events.Recorder("store-monitor")
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "default"}
	h.Extra.Store.SetRecorder(func(eventtype, reason, message string) {
		rec.Eventf(h.rootID, ref, eventtype, reason, "%s", message)
	})
	return background{name: "wharf-store-monitor", run: h.Extra.Store.Run}
}
