package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	edgesv1 "github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
)

func TestEdgeTable(t *testing.T) {
	now := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	mk := func(name string, typ edgesv1.EdgeType, age time.Duration, phase edgesv1.Phase, conn metav1.ConditionStatus, agent string) edgesv1.Edge {
		e := edgesv1.Edge{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))}, Spec: edgesv1.EdgeSpec{Type: typ}}
		e.Status.Phase, e.Status.AgentVersion = phase, agent
		if conn != "" {
			e.Status.Conditions = []metav1.Condition{{Type: edgesv1.ConditionRegistered, Status: metav1.ConditionTrue}, {Type: edgesv1.ConditionConnected, Status: conn}}
		}
		return e
	}
	edges := []edgesv1.Edge{
		mk("web-1", edgesv1.TypeServer, 50*time.Hour, edgesv1.PhaseDisconnected, metav1.ConditionFalse, "v0.1.0"),
		mk("lab", edgesv1.TypeKubernetes, 90*time.Second, edgesv1.PhaseReady, metav1.ConditionTrue, "v0.1.0-dev"),
		mk("new", edgesv1.TypeKubernetes, 5*time.Second, "", "", ""),
	}
	var out bytes.Buffer
	if err := writeEdgeTable(&out, edges, now); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NAME    TYPE         PHASE          CONNECTED   AGENT        AGE\n" +
		"lab     kubernetes   Ready          True        v0.1.0-dev   90s\n" +
		"new     kubernetes                                           5s\n" +
		"web-1   server       Disconnected   False       v0.1.0       2d2h\n"
	if out.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestKubectlErrors(t *testing.T) {
	err := fromServer(apierrors.NewNotFound(edgeGR, "lab"))
	if got := Message(err); got != `Error from server (NotFound): edges.edges.wharf.dev "lab" not found` {
		t.Fatalf("message %q", got)
	}
	if !apierrors.IsNotFound(err) {
		t.Fatal("the kubectl wording must keep the API error inspectable")
	}
	st := statusFromResponse(403, []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"edges.edges.wharf.dev \"lab\" is forbidden","reason":"Forbidden","code":403}`))
	if got := Message(fromServer(st)); got != `Error from server (Forbidden): edges.edges.wharf.dev "lab" is forbidden` {
		t.Fatalf("message %q", got)
	}
	if got := Message(fromServer(statusFromResponse(502, []byte("bad gateway")))); got != "Error from server: bad gateway" {
		t.Fatalf("non-Status answer: %q", got)
	}
	c := &hubConn{rest: &rest.Config{Host: "https://hub/clusters/root:x"}}
	if got := Message(notServed(apierrors.NewNotFound(edgeGR, "lab"), c)); got != `Error from server (NotFound): edges.edges.wharf.dev "lab" not found` {
		t.Fatalf("a missing edge: %q", got)
	}
	generic := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound, Message: "the server could not find the requested resource"}}
	if got := Message(notServed(generic, c)); !strings.HasPrefix(got, "wharf: the edges API is not served in https://hub/clusters/root:x; enable it") ||
		!strings.HasSuffix(got, ": Error from server (NotFound): the server could not find the requested resource") {
		t.Fatalf("an unserved API: %q", got)
	}
	if got := Message(errors.New("boom")); got != "wharf: boom" {
		t.Fatalf("plain error: %q", got)
	}
	x := &exitError{Code: 3}
	if Message(x) != "" || ExitCode(x) != 3 || ExitCode(errors.New("x")) != 1 || ExitCode(nil) != 0 {
		t.Fatal("exit status not passed through")
	}
}
