package sdk

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
)

// EventRecorder returns a client-go event recorder whose events land in one
// workspace (its path, such as root:acme, or its logical cluster id), as
// component (the events' source and reportingComponent). cfg is usually
// HubConfig.RestConfig: the hub lets a provider record events (create,
// patch, update) in the workspaces that enable it, and nowhere else.
// scheme resolves the kinds of the objects events are about; nil means
// client-go's scheme (the built-in kinds). Call stop when done: it flushes
// what is queued and ends the recorder.
//
//	rec, stop, err := sdk.EventRecorder(hc.RestConfig, id.Tenant, "hello", nil)
//	defer stop()
//	rec.Eventf(obj, corev1.EventTypeNormal, "Greeted", "said hello to %s", id.User)
func EventRecorder(cfg *rest.Config, workspace, component string, scheme *runtime.Scheme) (rec record.EventRecorder, stop func(), err error) {
	if cfg == nil {
		return nil, nil, fmt.Errorf("event recorder: no rest config")
	}
	if err := validTenant(workspace); err != nil {
		return nil, nil, fmt.Errorf("event recorder: %w", err)
	}
	c := rest.CopyConfig(cfg)
	c.Host = strings.TrimSuffix(c.Host, "/") + "/clusters/" + workspace
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, nil, fmt.Errorf("event recorder: %w", err)
	}
	if scheme == nil {
		scheme = clientgoscheme.Scheme
	}
	b := record.NewBroadcaster()
	w := b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	return b.NewRecorder(scheme, corev1.EventSource{Component: component}), func() { w.Stop(); b.Shutdown() }, nil
}
