package registry

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// eventTable prints events as kube-apiserver does for both API groups:
// LAST SEEN TYPE REASON OBJECT MESSAGE, and with -o wide the subobject,
// source, first seen, count and name.
var eventTable = Table{
	Columns: []metav1.TableColumnDefinition{
		{Name: "Last Seen", Type: "string", Description: corev1.Event{}.SwaggerDoc()["lastTimestamp"]},
		{Name: "Type", Type: "string", Description: corev1.Event{}.SwaggerDoc()["type"]},
		{Name: "Reason", Type: "string", Description: corev1.Event{}.SwaggerDoc()["reason"]},
		{Name: "Object", Type: "string", Description: corev1.Event{}.SwaggerDoc()["involvedObject"]},
		{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]},
		{Name: "Source", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["source"]},
		{Name: "Message", Type: "string", Description: corev1.Event{}.SwaggerDoc()["message"]},
		{Name: "First Seen", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["firstTimestamp"]},
		{Name: "Count", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["count"]},
		{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	},
	Cells: eventCells,
}

func eventCells(obj runtime.Object) []interface{} {
	e := obj.(*corev1.Event)
	first := since(e.FirstTimestamp.Time, e.FirstTimestamp.IsZero())
	if e.FirstTimestamp.IsZero() {
		// New-style events carry eventTime instead.
		first = since(e.EventTime.Time, e.EventTime.IsZero())
	}
	last := first
	if !e.LastTimestamp.IsZero() {
		last = since(e.LastTimestamp.Time, false)
	}
	count := e.Count
	if e.Series != nil {
		last = since(e.Series.LastObservedTime.Time, e.Series.LastObservedTime.IsZero())
		count = e.Series.Count
	} else if count == 0 {
		count = 1 // a singleton event of the new API has no count
	}
	object := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		object = fmt.Sprintf("%s/%s", object, e.InvolvedObject.Name)
	}
	return []interface{}{
		last, e.Type, e.Reason, object, e.InvolvedObject.FieldPath,
		eventSource(e), strings.TrimSpace(e.Message), first, int64(count), e.Name,
	}
}

// since is a timestamp as kubectl prints an age; zero is "<unknown>".
func since(t time.Time, zero bool) string {
	if zero {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t))
}

// eventSource is "component, host", each falling back to the new-style
// reporting fields.
func eventSource(e *corev1.Event) string {
	component, host := e.Source.Component, e.Source.Host
	if component == "" {
		component = e.ReportingController
	}
	if host == "" {
		host = e.ReportingInstance
	}
	if host == "" {
		return component
	}
	return component + ", " + host
}
