package hub

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// Issue 12 item 7: events in both API groups, compared with a real
// kube-apiserver. Timestamps in the bodies are fixed strings, so both sides
// store the very same event and only server-set metadata differs.

const evTime = "2026-01-02T03:04:05Z"

// evNamespace makes a fresh namespace on both sides.
func evNamespace(t *testing.T, f *fidelity) string {
	ns := f.unique("ev")
	f.MustBoth(t, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns))
	return ns
}

// evBody decodes an event and drops what the server sets differently on
// each side: metadata but for name and namespace, and regarding's uid.
func evBody(t *testing.T, a fidAnswer) map[string]interface{} {
	t.Helper()
	var m map[string]interface{}
	if err := json.Unmarshal([]byte(a.Body), &m); err != nil {
		t.Fatalf("decoding %s: %v", a, err)
	}
	if md, ok := m["metadata"].(map[string]interface{}); ok {
		m["metadata"] = map[string]interface{}{"name": md["name"], "namespace": md["namespace"]}
	}
	return m
}

func evSameBody(t *testing.T, what string, hub, kube fidAnswer) {
	t.Helper()
	if hub.Code != kube.Code {
		t.Fatalf("%s: hub %s, kube %s", what, hub, kube)
	}
	h, k := evBody(t, hub), evBody(t, kube)
	if !reflect.DeepEqual(h, k) {
		hb, _ := json.Marshal(h)
		kb, _ := json.Marshal(k)
		t.Errorf("%s differs:\n  hub:  %s\n  kube: %s", what, hb, kb)
	}
}

func coreEvent(ns, name, extra string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Event","metadata":{"name":%q,"namespace":%q},
 "involvedObject":{"kind":"ConfigMap","namespace":%q,"name":"cm1","apiVersion":"v1","fieldPath":"data"},
 "reason":"Tested","message":"core message ","type":"Warning","count":3,
 "source":{"component":"tester","host":"h1"},
 "firstTimestamp":%q,"lastTimestamp":%q%s}`, name, ns, ns, evTime, evTime, extra)
}

func newEvent(ns, name, extra string) string {
	return fmt.Sprintf(`{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":%q,"namespace":%q},
 "eventTime":"2026-01-02T03:04:05.000000Z","reportingController":"example.com/tester","reportingInstance":"tester-1",
 "action":"Testing","reason":"Tested","note":"new note","type":"Normal",
 "regarding":{"kind":"ConfigMap","namespace":%q,"name":"cm1","apiVersion":"v1"},
 "series":{"count":4,"lastObservedTime":"2026-01-02T03:05:05.000000Z"}%s}`, name, ns, ns, extra)
}

// lastSeen replaces the first column (LAST SEEN) of kubectl's event
// tables, an age that depends on when each side was asked.
var ageCell = regexp.MustCompile(`^\S+`)

func lastSeen(s string) string {
	var out []string
	for _, l := range strings.Split(AgeColumn(s), "\n") {
		if !strings.HasPrefix(l, "LAST SEEN") && !strings.HasPrefix(l, "NAMESPACE") {
			l = ageCell.ReplaceAllString(l, "<age>")
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func init() {
	registerFidelity("07-events/core-read-through-events-v1", func(t *testing.T, f *fidelity) {
		ns := evNamespace(t, f)
		f.Same(t, fidReq{Method: "POST", Path: "/api/v1/namespaces/" + ns + "/events", Body: coreEvent(ns, "e1", "")})
		h, k := f.Both(t, fidReq{Path: "/apis/events.k8s.io/v1/namespaces/" + ns + "/events/e1"})
		evSameBody(t, "events.k8s.io/v1 view of a core event", h, k)
		h, k = f.Both(t, fidReq{Path: "/api/v1/namespaces/" + ns + "/events/e1"})
		evSameBody(t, "core/v1 read back", h, k)
	})
	registerFidelity("07-events/events-v1-read-through-core", func(t *testing.T, f *fidelity) {
		ns := evNamespace(t, f)
		f.Same(t, fidReq{Method: "POST", Path: "/apis/events.k8s.io/v1/namespaces/" + ns + "/events", Body: newEvent(ns, "e2", "")})
		h, k := f.Both(t, fidReq{Path: "/api/v1/namespaces/" + ns + "/events/e2"})
		evSameBody(t, "core/v1 view of an events.k8s.io event", h, k)
		h, k = f.Both(t, fidReq{Path: "/apis/events.k8s.io/v1/namespaces/" + ns + "/events"})
		evSameBodyList(t, h, k)
		// Updates through events.k8s.io/v1 may change the series only.
		f.Same(t, fidReq{Method: "PATCH", Path: "/apis/events.k8s.io/v1/namespaces/" + ns + "/events/e2", Body: `{"note":"changed"}`})
		f.Same(t, fidReq{Method: "PATCH", Path: "/apis/events.k8s.io/v1/namespaces/" + ns + "/events/e2",
			Body: `{"series":{"count":5,"lastObservedTime":"2026-01-02T03:06:05.000000Z"}}`})
		f.Same(t, fidReq{Method: "PATCH", Path: "/api/v1/namespaces/" + ns + "/events/e2", Body: `{"message":"core may"}`})
	})
	registerFidelity("07-events/validation", func(t *testing.T, f *fidelity) {
		ns := evNamespace(t, f)
		core, ev := "/api/v1/namespaces/"+ns+"/events", "/apis/events.k8s.io/v1/namespaces/"+ns+"/events"
		for i, c := range []struct{ path, body string }{
			{core, strings.Replace(coreEvent(ns, "v1", ""), `"namespace":"`+ns+`","name":"cm1"`, `"namespace":"other","name":"cm1"`, 1)},
			{core, strings.Replace(coreEvent(ns, "v2", ""), `"namespace":"`+ns+`","name":"cm1"`, `"name":"cm1"`, 1)},
			{core, coreEvent(ns, "v3", `,"eventTime":"2026-01-02T03:04:05.000000Z"`)},
			{core, fmt.Sprintf(`{"metadata":{"name":"v4"},"eventTime":"2026-01-02T03:04:05.000000Z","involvedObject":{"namespace":%q},"reportingComponent":"Not Qualified!","reason":%q}`, ns, strings.Repeat("r", 129))},
			{ev, strings.Replace(newEvent(ns, "v5", ""), `"reportingController":"example.com/tester",`, "", 1)},
			{ev, strings.Replace(newEvent(ns, "v6", `,"deprecatedCount":2,"deprecatedSource":{"component":"x"}`), `"type":"Normal"`, `"type":"Fatal"`, 1)},
			{ev, strings.Replace(newEvent(ns, "v7", ""), `"count":4`, `"count":1`, 1)},
			{ev, strings.Replace(newEvent(ns, "v8", ""), `"eventTime":"2026-01-02T03:04:05.000000Z",`, "", 1)},
			{ev, newEvent(ns, "Bad_Name", "")},
			{ev, strings.Replace(newEvent(ns, "v9", ""), `"action":"Testing",`, `"action":"`+strings.Repeat("a", 129)+`",`, 1)},
		} {
			h, _ := f.Same(t, fidReq{Method: "POST", Path: c.path, Body: c.body})
			if h.Code != 422 {
				t.Errorf("case %d: want 422, hub said %s", i, h)
			}
		}
		// core/v1 keeps its lenient rules: a name that is no DNS subdomain,
		// a cluster-scoped object reported in default.
		f.Same(t, fidReq{Method: "POST", Path: core, Body: coreEvent(ns, "Bad_Name", "")})
		f.Same(t, fidReq{Method: "POST", Path: "/api/v1/namespaces/default/events",
			Body: strings.Replace(coreEvent("default", f.unique("v"), ""), `"namespace":"default","name":"cm1"`, `"name":"cm1"`, 1)})
		// The selectors kube supports, and its message for others.
		f.Same(t, fidReq{Path: core + "?fieldSelector=regarding.name%3Dx"})
		f.Same(t, fidReq{Path: ev + "?fieldSelector=involvedObject.name%3Dx"})
		f.Same(t, fidReq{Path: core + "?fieldSelector=involvedObject.uid%3Dx,source%3Dy,reportingComponent%3Dz,type%3DNormal"})
		f.Same(t, fidReq{Path: ev + "?fieldSelector=regarding.uid%3Dx,reportingController%3Dz,type%3DNormal"})
		f.Same(t, fidReq{Path: "/api/v1/namespaces/" + ns + "/events/nope"})
		f.Same(t, fidReq{Path: ev + "/nope"})
	})
	registerFidelity("07-events/field-selectors", func(t *testing.T, f *fidelity) {
		ns := evNamespace(t, f)
		f.Same(t, fidReq{Method: "POST", Path: "/api/v1/namespaces/" + ns + "/events", Body: coreEvent(ns, "s1", "")})
		f.Same(t, fidReq{Method: "POST", Path: "/apis/events.k8s.io/v1/namespaces/" + ns + "/events",
			Body: strings.Replace(newEvent(ns, "s2", ""), `"name":"cm1"`, `"name":"cm2"`, 1)})
		for _, q := range []string{
			"/api/v1/namespaces/" + ns + "/events?fieldSelector=" + url.QueryEscape("involvedObject.name=cm1"),
			"/api/v1/namespaces/" + ns + "/events?fieldSelector=" + url.QueryEscape("involvedObject.kind=ConfigMap,reason=Tested,type=Normal"),
			"/api/v1/namespaces/" + ns + "/events?fieldSelector=" + url.QueryEscape("source=tester"),
			"/api/v1/namespaces/" + ns + "/events?fieldSelector=" + url.QueryEscape("source=example.com/tester"),
			"/apis/events.k8s.io/v1/namespaces/" + ns + "/events?fieldSelector=" + url.QueryEscape("regarding.name=cm2"),
			"/apis/events.k8s.io/v1/namespaces/" + ns + "/events?fieldSelector=" + url.QueryEscape("reportingController=example.com/tester"),
			"/apis/events.k8s.io/v1/namespaces/" + ns + "/events?fieldSelector=" + url.QueryEscape("regarding.fieldPath=data"),
		} {
			h, k := f.Both(t, fidReq{Path: q})
			if hn, kn := eventNames(t, h), eventNames(t, k); hn != kn {
				t.Errorf("%s: hub %q, kube %q", q, hn, kn)
			}
		}
	})
	registerFidelity("07-events/kubectl", func(t *testing.T, f *fidelity) {
		ns := evNamespace(t, f)
		f.Same(t, fidReq{Method: "POST", Path: "/api/v1/namespaces/" + ns + "/events", Body: coreEvent(ns, "k1", "")})
		f.Same(t, fidReq{Method: "POST", Path: "/apis/events.k8s.io/v1/namespaces/" + ns + "/events", Body: newEvent(ns, "k2", "")})
		f.Same(t, fidReq{Path: "/api/v1/namespaces/" + ns + "/events", Accept: "application/json;as=Table;v=v1;g=meta.k8s.io"})
		f.Same(t, fidReq{Path: "/apis/events.k8s.io/v1/namespaces/" + ns + "/events", Accept: "application/json;as=Table;v=v1;g=meta.k8s.io"})
		f.SameKubectl(t, lastSeen, "", "get", "events", "-n", ns)
		f.SameKubectl(t, lastSeen, "", "get", "events.v1.events.k8s.io", "-n", ns)
		f.SameKubectl(t, lastSeen, "", "get", "ev", "-n", ns, "-o", "wide")
		f.SameKubectl(t, lastSeen, "", "events", "-n", ns)
		f.SameKubectl(t, lastSeen, "", "events", "-n", ns, "--for", "configmap/cm1")
		f.SameKubectl(t, lastSeen, "", "events", "-n", ns, "--types", "Warning")
	})
	registerFidelity("07-events/describe", func(t *testing.T, f *fidelity) {
		ns := evNamespace(t, f)
		f.MustBoth(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm1\n  namespace: %s\n", ns))
		// The event names the ConfigMap by uid, which differs per side.
		for side, do := range map[string]func(*testing.T, fidReq) fidAnswer{"hub": f.OnHub, "kube": f.OnKube} {
			cm := do(t, fidReq{Path: "/api/v1/namespaces/" + ns + "/configmaps/cm1"})
			var obj struct {
				Metadata struct{ UID string } `json:"metadata"`
			}
			if err := json.Unmarshal([]byte(cm.Body), &obj); err != nil || obj.Metadata.UID == "" {
				t.Fatalf("%s: configmap: %s", side, cm)
			}
			body := strings.Replace(coreEvent(ns, "d1", ""), `"name":"cm1"`, `"name":"cm1","uid":"`+obj.Metadata.UID+`"`, 1)
			if a := do(t, fidReq{Method: "POST", Path: "/api/v1/namespaces/" + ns + "/events", Body: body}); a.Code != 201 {
				t.Fatalf("%s: creating event: %s", side, a)
			}
		}
		h, k, he, ke := f.BothKubectl("", "describe", "configmap", "cm1", "-n", ns)
		if he != nil || ke != nil {
			t.Fatalf("describe: hub %v %s; kube %v %s", he, h, ke, k)
		}
		if hs, ks := eventsSection(h), eventsSection(k); hs != ks || !strings.Contains(hs, "Tested") {
			t.Errorf("describe configmap events:\n  hub:\n%s\n  kube:\n%s", hs, ks)
		}
	})
}

// eventsSection is describe's Events: block with ages blanked.
func eventsSection(s string) string {
	i := strings.Index(s, "\nEvents:")
	if i < 0 {
		return ""
	}
	return regexp.MustCompile(`\b\d+[smhdy]\d*[smhdy]?\b|<unknown>`).ReplaceAllString(strings.Join(strings.Fields(s[i:]), " "), "<age>")
}

func eventNames(t *testing.T, a fidAnswer) string {
	t.Helper()
	var l struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(a.Body), &l); err != nil {
		t.Fatalf("decoding list %s: %v", a, err)
	}
	var out []string
	for _, it := range l.Items {
		out = append(out, it.Metadata.Name)
	}
	return fmt.Sprint(a.Code, out)
}

func evSameBodyList(t *testing.T, hub, kube fidAnswer) {
	t.Helper()
	var h, k struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	_ = json.Unmarshal([]byte(hub.Body), &h)
	_ = json.Unmarshal([]byte(kube.Body), &k)
	if h.Kind != k.Kind || len(h.Items) != len(k.Items) {
		t.Fatalf("lists differ: hub %s, kube %s", hub, kube)
	}
	for i := range h.Items {
		evSameBody(t, fmt.Sprintf("item %d", i), fidAnswer{Code: 200, Body: string(h.Items[i])}, fidAnswer{Code: 200, Body: string(k.Items[i])})
	}
}
