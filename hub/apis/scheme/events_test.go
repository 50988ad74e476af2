package scheme

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// An events.k8s.io/v1 Event decodes into the stored core form and back
// without loss, and a core event reads through events.k8s.io/v1 with the
// fields renamed as upstream.
func TestEventConversion(t *testing.T) {
	s := New()
	codecs := NewCodecs(s)
	now := metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	in := &eventsv1.Event{
		TypeMeta:   metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"},
		ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"},
		EventTime:  now, ReportingController: "x.io/c", ReportingInstance: "i", Action: "A", Reason: "R",
		Regarding: corev1.ObjectReference{Kind: "ConfigMap", Name: "cm"}, Note: "n", Type: "Normal",
		Series:          &eventsv1.EventSeries{Count: 3, LastObservedTime: now},
		DeprecatedCount: 7, DeprecatedSource: corev1.EventSource{Component: "old"},
	}
	internal := schema.GroupVersion{Group: "events.k8s.io", Version: runtime.APIVersionInternal}
	out, err := s.ConvertToVersion(in.DeepCopy(), internal)
	if err != nil {
		t.Fatal(err)
	}
	core, ok := out.(*corev1.Event)
	if !ok {
		t.Fatalf("stored form is %T, want *corev1.Event", out)
	}
	if core.InvolvedObject.Name != "cm" || core.Message != "n" || core.Count != 7 || core.Source.Component != "old" ||
		core.Series == nil || core.Series.Count != 3 || core.ReportingController != "x.io/c" {
		t.Errorf("core form: %+v", core)
	}
	// The storage codec writes core/v1, as kube-apiserver stores events.
	data, err := runtime.Encode(codecs.LegacyCodec(corev1.SchemeGroupVersion, eventsv1.SchemeGroupVersion), core)
	if err != nil {
		t.Fatal(err)
	}
	var tm metav1.TypeMeta
	_ = json.Unmarshal(data, &tm)
	if tm.APIVersion != "v1" || tm.Kind != "Event" {
		t.Errorf("stored as %s %s, want v1 Event", tm.APIVersion, tm.Kind)
	}
	back, err := s.ConvertToVersion(core, eventsv1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	got := back.(*eventsv1.Event)
	got.TypeMeta = in.TypeMeta
	want, _ := json.Marshal(in)
	have, _ := json.Marshal(got)
	if string(want) != string(have) {
		t.Errorf("round trip:\n want %s\n have %s", want, have)
	}
}

func TestEventFieldLabels(t *testing.T) {
	s := New()
	for _, c := range []struct {
		gvk       schema.GroupVersionKind
		label     string
		want      string
		wantError bool
	}{
		{corev1.SchemeGroupVersion.WithKind("Event"), "involvedObject.uid", "involvedObject.uid", false},
		{corev1.SchemeGroupVersion.WithKind("Event"), "regarding.name", "", true},
		{eventsv1.SchemeGroupVersion.WithKind("Event"), "regarding.name", "involvedObject.name", false},
		{eventsv1.SchemeGroupVersion.WithKind("Event"), "reportingController", "reportingComponent", false},
		{eventsv1.SchemeGroupVersion.WithKind("Event"), "involvedObject.name", "", true},
	} {
		got, _, err := s.ConvertFieldLabel(c.gvk, c.label, "v")
		if (err != nil) != c.wantError || got != c.want {
			t.Errorf("%s %s: got %q, %v", c.gvk, c.label, got, err)
		}
	}
}
