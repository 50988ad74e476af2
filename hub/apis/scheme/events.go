package scheme

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Events are served twice, as upstream does: core/v1 Event and
// events.k8s.io/v1 Event are two views of the same stored objects. Upstream
// registers the internal core Event as the internal type of the events
// group too; here the internal type is corev1.Event (see the package doc),
// so an events.k8s.io/v1 request decodes into a corev1.Event, is stored as
// core/v1, and is converted back on the way out.

// EventsGroupVersion is events.k8s.io/v1.
var EventsGroupVersion = eventsv1.SchemeGroupVersion

func registerEvents(s *runtime.Scheme) error {
	s.AddKnownTypes(EventsGroupVersion, &eventsv1.Event{}, &eventsv1.EventList{})
	s.AddKnownTypes(schema.GroupVersion{Group: eventsv1.GroupName, Version: runtime.APIVersionInternal},
		&corev1.Event{}, &corev1.EventList{})
	metav1.AddToGroupVersion(s, EventsGroupVersion)
	if err := s.SetVersionPriority(EventsGroupVersion); err != nil {
		return err
	}
	for _, f := range []struct {
		a, b interface{}
		fn   conversion.ConversionFunc
	}{
		{(*eventsv1.Event)(nil), (*corev1.Event)(nil), func(a, b interface{}, _ conversion.Scope) error {
			EventToCore(a.(*eventsv1.Event), b.(*corev1.Event))
			return nil
		}},
		{(*corev1.Event)(nil), (*eventsv1.Event)(nil), func(a, b interface{}, _ conversion.Scope) error {
			EventFromCore(a.(*corev1.Event), b.(*eventsv1.Event))
			return nil
		}},
		{(*eventsv1.EventList)(nil), (*corev1.EventList)(nil), func(a, b interface{}, _ conversion.Scope) error {
			in, out := a.(*eventsv1.EventList), b.(*corev1.EventList)
			out.ListMeta = in.ListMeta
			out.Items = make([]corev1.Event, len(in.Items))
			for i := range in.Items {
				EventToCore(&in.Items[i], &out.Items[i])
			}
			return nil
		}},
		{(*corev1.EventList)(nil), (*eventsv1.EventList)(nil), func(a, b interface{}, _ conversion.Scope) error {
			in, out := a.(*corev1.EventList), b.(*eventsv1.EventList)
			out.ListMeta = in.ListMeta
			out.Items = make([]eventsv1.Event, len(in.Items))
			for i := range in.Items {
				EventFromCore(&in.Items[i], &out.Items[i])
			}
			return nil
		}},
	} {
		if err := s.AddConversionFunc(f.a, f.b, f.fn); err != nil {
			return fmt.Errorf("registering event conversion: %w", err)
		}
	}
	if err := s.AddFieldLabelConversionFunc(corev1.SchemeGroupVersion.WithKind("Event"), coreEventFieldLabel); err != nil {
		return err
	}
	return s.AddFieldLabelConversionFunc(EventsGroupVersion.WithKind("Event"), eventsV1FieldLabel)
}

// EventToCore maps an events.k8s.io/v1 Event onto its stored core/v1 form,
// field by field as upstream's conversion: regarding is involvedObject,
// note is message, the deprecated* fields are the legacy ones.
func EventToCore(in *eventsv1.Event, out *corev1.Event) {
	*out = corev1.Event{
		ObjectMeta:          *in.ObjectMeta.DeepCopy(),
		InvolvedObject:      in.Regarding,
		Reason:              in.Reason,
		Message:             in.Note,
		Source:              in.DeprecatedSource,
		FirstTimestamp:      in.DeprecatedFirstTimestamp,
		LastTimestamp:       in.DeprecatedLastTimestamp,
		Count:               in.DeprecatedCount,
		Type:                in.Type,
		EventTime:           in.EventTime,
		Action:              in.Action,
		ReportingController: in.ReportingController,
		ReportingInstance:   in.ReportingInstance,
	}
	if in.Related != nil {
		r := *in.Related
		out.Related = &r
	}
	if in.Series != nil {
		out.Series = &corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
}

// EventFromCore is the inverse of EventToCore.
func EventFromCore(in *corev1.Event, out *eventsv1.Event) {
	*out = eventsv1.Event{
		ObjectMeta:               *in.ObjectMeta.DeepCopy(),
		EventTime:                in.EventTime,
		ReportingController:      in.ReportingController,
		ReportingInstance:        in.ReportingInstance,
		Action:                   in.Action,
		Reason:                   in.Reason,
		Regarding:                in.InvolvedObject,
		Note:                     in.Message,
		Type:                     in.Type,
		DeprecatedSource:         in.Source,
		DeprecatedFirstTimestamp: in.FirstTimestamp,
		DeprecatedLastTimestamp:  in.LastTimestamp,
		DeprecatedCount:          in.Count,
	}
	if in.Related != nil {
		r := *in.Related
		out.Related = &r
	}
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
}

// coreEventFields are the field selectors core/v1 events accept, as
// upstream; the storage's attribute function (hub/registry) sets each.
var coreEventFields = map[string]bool{
	"involvedObject.kind": true, "involvedObject.namespace": true, "involvedObject.name": true,
	"involvedObject.uid": true, "involvedObject.apiVersion": true, "involvedObject.resourceVersion": true,
	"involvedObject.fieldPath": true, "reason": true, "reportingComponent": true, "source": true, "type": true,
	"metadata.namespace": true, "metadata.name": true,
}

func coreEventFieldLabel(label, value string) (string, string, error) {
	if !coreEventFields[label] {
		return "", "", fmt.Errorf("field label not supported: %s", label)
	}
	return label, value, nil
}

// eventsV1Fields renames the events.k8s.io/v1 selectors to the core/v1
// fields the storage evaluates.
var eventsV1Fields = map[string]string{
	"reason": "reason", "type": "type", "metadata.namespace": "metadata.namespace", "metadata.name": "metadata.name",
	"regarding.kind": "involvedObject.kind", "regarding.namespace": "involvedObject.namespace",
	"regarding.name": "involvedObject.name", "regarding.uid": "involvedObject.uid",
	"regarding.apiVersion": "involvedObject.apiVersion", "regarding.resourceVersion": "involvedObject.resourceVersion",
	"regarding.fieldPath": "involvedObject.fieldPath", "reportingController": "reportingComponent",
}

func eventsV1FieldLabel(label, value string) (string, string, error) {
	mapped, ok := eventsV1Fields[label]
	if !ok {
		return "", "", fmt.Errorf("field label not supported: %s", label)
	}
	return mapped, value, nil
}
