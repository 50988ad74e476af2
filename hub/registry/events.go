package registry

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
)

// DefaultEventTTL is how long an event lives when --event-ttl is not set,
// as kube-apiserver's default.
const DefaultEventTTL = time.Hour

// EventStorage is the REST storage of events in both API groups. Upstream
// serves events.k8s.io/v1 events from the same etcd keys as core/v1 events
// (cohabiting resources); both stores here write under the core prefix, so
// an event created through one API is read through the other.
type EventStorage struct {
	Core   *Store
	Events *Store
}

// NewEventStorage builds both event stores. Every event written gets an etcd
// lease of ttl, through the generic store's TTLFunc as upstream: the store
// asks it on create and on every update (patch and apply are updates), so
// no write path stores an event without one.
func NewEventStorage(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, ttl time.Duration) (*EventStorage, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("event TTL must be positive, got %s", ttl)
	}
	core, err := newEventStore(typer, optsGetter, corev1.Resource("events"), ttl)
	if err != nil {
		return nil, err
	}
	events, err := newEventStore(typer, cohabiting{optsGetter}, eventsv1.Resource("events"), ttl)
	if err != nil {
		return nil, err
	}
	return &EventStorage{Core: core, Events: events}, nil
}

// cohabiting hands the events.k8s.io store the storage options of core
// events, so both read and write the same keys.
type cohabiting struct{ generic.RESTOptionsGetter }

func (c cohabiting) GetRESTOptions(_ schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	return c.RESTOptionsGetter.GetRESTOptions(corev1.Resource("events"), example)
}

func newEventStore(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, gr schema.GroupResource, ttl time.Duration) (*Store, error) {
	seconds := uint64(ttl.Seconds())
	st := eventStrategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
	s := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &corev1.Event{} },
		NewListFunc:               func() runtime.Object { return &corev1.EventList{} },
		PredicateFunc:             matchEvent,
		TTLFunc:                   func(runtime.Object, uint64, bool) (uint64, error) { return seconds, nil },
		DefaultQualifiedResource:  gr,
		SingularQualifiedResource: schema.GroupResource{Group: gr.Group, Resource: "event"},
		CreateStrategy:            st,
		UpdateStrategy:            st,
		DeleteStrategy:            st,
		TableConvertor:            eventTable,
	}
	if err := s.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: eventAttrs}); err != nil {
		return nil, fmt.Errorf("completing storage for %s: %w", gr, err)
	}
	return &Store{Store: s, shortNames: []string{"ev"}}, nil
}

// eventStrategy validates events as upstream: core/v1 writes get the
// lenient legacy checks, events.k8s.io/v1 writes the strict ones
// (validation_events.go).
type eventStrategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	Defaults
}

var (
	_ rest.RESTCreateStrategy              = eventStrategy{}
	_ rest.RESTUpdateStrategy              = eventStrategy{}
	_ rest.GarbageCollectionDeleteStrategy = eventStrategy{}
	_ rest.RESTDeleteStrategy              = eventStrategy{}
)

func (eventStrategy) NamespaceScoped() bool { return true }

func (eventStrategy) PrepareForCreate(context.Context, runtime.Object) {}

func (eventStrategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// AllowCreateOnUpdate is true for events upstream: a PUT may create one.
func (eventStrategy) AllowCreateOnUpdate(context.Context) bool { return true }

// DefaultGarbageCollectionPolicy: events take no part in garbage collection
// upstream, so deletion never waits on orphan or foreground finalizers.
func (eventStrategy) DefaultGarbageCollectionPolicy(context.Context) rest.GarbageCollectionPolicy {
	return rest.Unsupported
}

func (eventStrategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return validateEventCreate(obj.(*corev1.Event), requestGroupVersion(ctx))
}

func (eventStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validateEventUpdate(obj.(*corev1.Event), old.(*corev1.Event), requestGroupVersion(ctx))
}

func matchEvent(label labels.Selector, fs fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: fs, GetAttrs: eventAttrs}
}

// eventAttrs gives the fields a selector can name, with upstream's names
// (events.k8s.io/v1 selectors are renamed to these by the scheme). kubectl
// describe finds an object's events through involvedObject.*.
func eventAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return nil, nil, fmt.Errorf("not an event: %T", obj)
	}
	source := e.Source.Component
	if source == "" {
		source = e.ReportingController
	}
	f := generic.ObjectMetaFieldsSet(&e.ObjectMeta, true)
	for k, v := range map[string]string{
		"involvedObject.kind":            e.InvolvedObject.Kind,
		"involvedObject.namespace":       e.InvolvedObject.Namespace,
		"involvedObject.name":            e.InvolvedObject.Name,
		"involvedObject.uid":             string(e.InvolvedObject.UID),
		"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         source,
		"type":                           e.Type,
	} {
		f[k] = v
	}
	return labels.Set(e.Labels), f, nil
}
