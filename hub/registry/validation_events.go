package registry

import (
	"context"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// Length limits of event fields, as kube-apiserver enforces them.
const (
	eventReportingInstanceLimit = 128
	eventActionLimit            = 128
	eventReasonLimit            = 128
	eventNoteLimit              = 1024
)

// requestGroupVersion is the API version a write came in through; the
// hub's own controllers write without one and get the strict rules, as an
// upstream in-process caller would.
func requestGroupVersion(ctx context.Context) schema.GroupVersion {
	if info, ok := request.RequestInfoFrom(ctx); ok {
		return schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
	}
	return schema.GroupVersion{}
}

// validateEventCreate applies kube-apiserver's rules for a new event: the
// legacy ones always, the strict ones for every version but core/v1
// (old clients keep working there).
func validateEventCreate(e *corev1.Event, gv schema.GroupVersion) field.ErrorList {
	errs := validateLegacyEvent(e, gv)
	if gv == corev1.SchemeGroupVersion {
		return errs
	}
	errs = append(errs, apimachineryvalidation.ValidateObjectMeta(&e.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	errs = append(errs, validateEventSeries(e)...)
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	for _, unset := range []struct {
		name string
		set  bool
	}{
		{"firstTimestamp", !e.FirstTimestamp.IsZero()},
		{"lastTimestamp", !e.LastTimestamp.IsZero()},
		{"count", e.Count != 0},
		{"source", e.Source.Component != "" || e.Source.Host != ""},
	} {
		if unset.set {
			errs = append(errs, field.Invalid(field.NewPath(unset.name), "", "needs to be unset"))
		}
	}
	return errs
}

// validateEventUpdate: through events.k8s.io/v1 an event is immutable but
// for its series and metadata, as upstream.
func validateEventUpdate(e, old *corev1.Event, gv schema.GroupVersion) field.ErrorList {
	errs := validateLegacyEvent(e, gv)
	if gv == corev1.SchemeGroupVersion {
		return errs
	}
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaUpdate(&e.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	if !reflect.DeepEqual(e.Series, old.Series) {
		errs = append(errs, validateEventSeries(e)...)
	}
	for _, f := range []struct {
		name     string
		new, old interface{}
	}{
		{"involvedObject", e.InvolvedObject, old.InvolvedObject},
		{"reason", e.Reason, old.Reason},
		{"message", e.Message, old.Message},
		{"source", e.Source, old.Source},
		{"firstTimestamp", e.FirstTimestamp, old.FirstTimestamp},
		{"lastTimestamp", e.LastTimestamp, old.LastTimestamp},
		{"count", e.Count, old.Count},
		{"reason", e.Reason, old.Reason},
		{"type", e.Type, old.Type},
		{"eventTime", e.EventTime, old.EventTime},
		{"action", e.Action, old.Action},
		{"related", e.Related, old.Related},
		{"reportingController", e.ReportingController, old.ReportingController},
		{"reportingInstance", e.ReportingInstance, old.ReportingInstance},
	} {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(f.new, f.old, field.NewPath(f.name))...)
	}
	return errs
}

func validateEventSeries(e *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	if e.Series == nil {
		return nil
	}
	if e.Series.Count < 2 {
		errs = append(errs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
	}
	if e.Series.LastObservedTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("series.lastObservedTime"), ""))
	}
	return errs
}

// validateLegacyEvent holds the rules every event meets. The namespace
// check is what keeps an event's object in the event's own namespace:
// events live in the workspace they were written to, so an event cannot
// name an object of another workspace either.
func validateLegacyEvent(e *corev1.Event, gv schema.GroupVersion) field.ErrorList {
	var errs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	mismatch := func() {
		errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
	}
	if e.EventTime.IsZero() {
		// An old-style event: an object without a namespace is reported in
		// default (or no namespace), any other in its own namespace.
		if e.InvolvedObject.Namespace == "" {
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				mismatch()
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			mismatch()
		}
		return errs
	}
	if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
		mismatch()
	}
	// core/v1 calls the field reportingComponent in its messages.
	controller := field.NewPath("reportingController")
	if gv == corev1.SchemeGroupVersion {
		controller = field.NewPath("reportingComponent")
	}
	if e.ReportingController == "" {
		errs = append(errs, field.Required(controller, ""))
	}
	for _, msg := range validation.IsQualifiedName(e.ReportingController) {
		errs = append(errs, field.Invalid(controller, e.ReportingController, msg))
	}
	errs = append(errs, requiredAtMost(field.NewPath("reportingInstance"), e.ReportingInstance, eventReportingInstanceLimit)...)
	errs = append(errs, requiredAtMost(field.NewPath("action"), e.Action, eventActionLimit)...)
	errs = append(errs, requiredAtMost(field.NewPath("reason"), e.Reason, eventReasonLimit)...)
	if len(e.Message) > eventNoteLimit {
		errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", eventNoteLimit)))
	}
	return errs
}

func requiredAtMost(p *field.Path, v string, limit int) field.ErrorList {
	var errs field.ErrorList
	if v == "" {
		errs = append(errs, field.Required(p, ""))
	}
	if len(v) > limit {
		errs = append(errs, field.Invalid(p, "", fmt.Sprintf("can have at most %v characters", limit)))
	}
	return errs
}
