package registry

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestValidateEvent(t *testing.T) {
	now := metav1.NewMicroTime(time.Now())
	newStyle := func() *corev1.Event {
		return &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}, EventTime: now,
			InvolvedObject:      corev1.ObjectReference{Namespace: "ns", Name: "x"},
			ReportingController: "x.io/c", ReportingInstance: "i", Action: "A", Reason: "R", Type: "Normal",
		}
	}
	core, ev := corev1.SchemeGroupVersion, eventsv1.SchemeGroupVersion
	for _, c := range []struct {
		name string
		gv   schema.GroupVersion
		mut  func(*corev1.Event)
		want string // "" means valid
	}{
		{"valid new-style", ev, func(*corev1.Event) {}, ""},
		{"valid legacy", core, func(e *corev1.Event) { e.EventTime = metav1.MicroTime{}; e.Action = "" }, ""},
		{"legacy namespace mismatch", core, func(e *corev1.Event) { e.EventTime = metav1.MicroTime{}; e.InvolvedObject.Namespace = "other" },
			"involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"},
		{"cluster object outside default", core, func(e *corev1.Event) { e.InvolvedObject.Namespace = "" },
			"does not match event.namespace"},
		{"core names reportingComponent", core, func(e *corev1.Event) { e.ReportingController = "" }, "reportingComponent: Required value"},
		{"events.k8s.io names reportingController", ev, func(e *corev1.Event) { e.ReportingController = "" }, "reportingController: Required value"},
		{"strict type", ev, func(e *corev1.Event) { e.Type = "Fatal" }, "type: Invalid value: \"\": has invalid value: Fatal"},
		{"strict count", ev, func(e *corev1.Event) { e.Count = 2 }, "count: Invalid value: \"\": needs to be unset"},
		{"core allows count", core, func(e *corev1.Event) { e.Count = 2 }, ""},
		{"series count", ev, func(e *corev1.Event) { e.Series = &corev1.EventSeries{Count: 1, LastObservedTime: now} }, "series.count"},
		{"long action", ev, func(e *corev1.Event) { e.Action = strings.Repeat("a", 129) }, "action: Invalid value: \"\": can have at most 128 characters"},
		{"strict name", ev, func(e *corev1.Event) { e.Name = "Bad_Name" }, "metadata.name"},
	} {
		e := newStyle()
		c.mut(e)
		errs := validateEventCreate(e, c.gv)
		got := errs.ToAggregate()
		switch {
		case c.want == "" && got != nil:
			t.Errorf("%s: unexpected %v", c.name, got)
		case c.want != "" && (got == nil || !strings.Contains(got.Error(), c.want)):
			t.Errorf("%s: got %v, want %q", c.name, got, c.want)
		}
	}
}

func TestValidateEventUpdateImmutable(t *testing.T) {
	old := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", ResourceVersion: "1"},
		EventTime: metav1.NewMicroTime(time.Now()), InvolvedObject: corev1.ObjectReference{Namespace: "ns"},
		ReportingController: "x.io/c", ReportingInstance: "i", Action: "A", Reason: "R", Type: "Normal", Message: "m"}
	n := old.DeepCopy()
	n.Message = "changed"
	if errs := validateEventUpdate(n, old, eventsv1.SchemeGroupVersion); errs.ToAggregate() == nil || !strings.Contains(errs.ToAggregate().Error(), "message: Invalid value: \"changed\": field is immutable") {
		t.Errorf("events.k8s.io update of message: %v", errs.ToAggregate())
	}
	if errs := validateEventUpdate(n, old, corev1.SchemeGroupVersion); len(errs) != 0 {
		t.Errorf("core/v1 update of message: %v", errs.ToAggregate())
	}
}

func TestEventTableAndAttrs(t *testing.T) {
	e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Name: "cm", Namespace: "ns", UID: "u1", FieldPath: "data"},
		Reason:         "R", Message: " hi ", Type: "Warning", ReportingController: "x.io/c", ReportingInstance: "i",
		EventTime: metav1.NewMicroTime(time.Now().Add(-90 * time.Second))}
	cells := eventCells(e)
	if cells[0] != "90s" || cells[3] != "configmap/cm" || cells[4] != "data" || cells[5] != "x.io/c, i" ||
		cells[6] != "hi" || cells[7] != "90s" || cells[8] != int64(1) || cells[9] != "e" {
		t.Errorf("cells %#v", cells)
	}
	if len(cells) != len(eventTable.Columns) {
		t.Errorf("%d cells for %d columns", len(cells), len(eventTable.Columns))
	}
	_, f, err := eventAttrs(e)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"involvedObject.uid": "u1", "source": "x.io/c", "reportingComponent": "x.io/c",
		"involvedObject.kind": "ConfigMap", "metadata.namespace": "ns", "type": "Warning"} {
		if f[k] != v {
			t.Errorf("field %s = %q, want %q", k, f[k], v)
		}
	}
}
