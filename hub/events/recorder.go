package events

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// Broadcaster owns the hub's event pipeline: one client-go broadcaster for
// every controller, writing through a cluster-aware sink.
type Broadcaster struct {
	scheme      *runtime.Scheme
	broadcaster record.EventBroadcaster
	sink        *Sink
}

// NewBroadcaster returns a broadcaster whose events go through loopback
// (the hub's privileged in-process client config) to their workspace.
func NewBroadcaster(scheme *runtime.Scheme, loopback *rest.Config) (*Broadcaster, error) {
	sink, err := NewSink(loopback)
	if err != nil {
		return nil, err
	}
	return &Broadcaster{scheme: scheme, broadcaster: record.NewBroadcaster(), sink: sink}, nil
}

// Run writes events until ctx is done.
func (b *Broadcaster) Run(ctx context.Context) {
	w := b.broadcaster.StartRecordingToSink(b.sink)
	logW := b.broadcaster.StartStructuredLogging(3)
	<-ctx.Done()
	w.Stop()
	logW.Stop()
	b.broadcaster.Shutdown()
}

// Recorder returns the recorder of one controller, named component in the
// events' source (reportingComponent), as upstream controllers do.
func (b *Broadcaster) Recorder(component string) *Recorder {
	return &Recorder{r: b.broadcaster.NewRecorder(b.scheme, corev1.EventSource{Component: component})}
}

// Recorder records events about objects of a given workspace.
type Recorder struct {
	r record.EventRecorder
}

// Eventf records an event about obj into the workspace id. A nil Recorder
// records nothing, so controllers need not check for one.
func (r *Recorder) Eventf(id cluster.ID, obj runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	if r == nil || id == "" {
		return
	}
	r.r.AnnotatedEventf(plainNamespace(obj), map[string]string{wstorage.ClusterAnnotation: string(id)}, eventtype, reason, messageFmt, args...)
}

// plainNamespace undoes the cluster informers' keying: their copies carry
// "<cluster>/<namespace>" as namespace, which the event's involvedObject
// (and so its own namespace) must not.
func plainNamespace(obj runtime.Object) runtime.Object {
	m, err := meta.Accessor(obj)
	if err != nil || !strings.Contains(m.GetNamespace(), "/") {
		return obj
	}
	obj = obj.DeepCopyObject()
	m, _ = meta.Accessor(obj)
	_, ns := wstorage.SplitClusterNamespace(m)
	m.SetNamespace(ns)
	return obj
}

// Sink is a record.EventSink that writes each event into the workspace its
// wharf.dev/cluster annotation names, through /clusters/<id>.
type Sink struct {
	base *rest.Config
	http *http.Client

	mu      sync.Mutex
	clients map[cluster.ID]record.EventSink
}

var _ record.EventSink = &Sink{}

// NewSink returns a sink over the loopback config; every workspace's client
// shares one HTTP transport.
func NewSink(loopback *rest.Config) (*Sink, error) {
	hc, err := rest.HTTPClientFor(loopback)
	if err != nil {
		return nil, fmt.Errorf("event sink client: %w", err)
	}
	return &Sink{base: rest.CopyConfig(loopback), http: hc, clients: map[cluster.ID]record.EventSink{}}, nil
}

func (s *Sink) forEvent(e *corev1.Event) (record.EventSink, error) {
	id := cluster.ID(e.Annotations[wstorage.ClusterAnnotation])
	if id == "" {
		return nil, fmt.Errorf("event %s/%s names no workspace; dropped", e.Namespace, e.Name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[id]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(s.base)
	cfg.Host = strings.TrimSuffix(cfg.Host, "/") + "/clusters/" + string(id)
	cs, err := kubernetes.NewForConfigAndClient(cfg, s.http)
	if err != nil {
		return nil, fmt.Errorf("event client for %s: %w", id, err)
	}
	c := &typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")}
	s.clients[id] = c
	return c, nil
}

// Create implements record.EventSink.
func (s *Sink) Create(e *corev1.Event) (*corev1.Event, error) {
	c, err := s.forEvent(e)
	if err != nil {
		klog.ErrorS(err, "Dropping event", "reason", e.Reason)
		return nil, err
	}
	return c.Create(e)
}

// Update implements record.EventSink.
func (s *Sink) Update(e *corev1.Event) (*corev1.Event, error) {
	c, err := s.forEvent(e)
	if err != nil {
		return nil, err
	}
	return c.Update(e)
}

// Patch implements record.EventSink.
func (s *Sink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	c, err := s.forEvent(e)
	if err != nil {
		return nil, err
	}
	return c.Patch(e, data)
}

// Forget drops the client of a deleted workspace.
func (s *Sink) Forget(id cluster.ID) {
	s.mu.Lock()
	delete(s.clients, id)
	s.mu.Unlock()
}
