package fairness

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage"

	"github.com/wharfhub/wharf/hub/apis/scheme"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/selectors"
)

func TestEstimator(t *testing.T) {
	e := NewEstimator(10)
	list := &apirequest.RequestInfo{IsResourceRequest: true, Verb: "list", APIVersion: "v1", Resource: "configmaps", Namespace: "ns"}
	in := func(ws string) context.Context {
		return cluster.WithTarget(context.Background(), cluster.Target{Raw: ws, Explicit: true})
	}
	// serveVia answers a list of n bytes, gzipped if zip, through
	// WithCost wrapped by wrap.
	serveVia := func(wrap func(http.Handler) http.Handler, ws, query string, n int, zip bool) {
		h := wrap(e.WithCost(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			body := bytes.Repeat([]byte("a"), n)
			if zip {
				w.Header().Set("Content-Encoding", "gzip")
				zw := gzip.NewWriter(w)
				_, _ = zw.Write(body)
				_ = zw.Close()
				return
			}
			_, _ = w.Write(body)
		})))
		r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/configmaps?"+query, nil)
		r = r.WithContext(apirequest.WithRequestInfo(in(ws), list))
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	serve := func(ws, query string, n int, zip bool) {
		serveVia(func(h http.Handler) http.Handler { return h }, ws, query, n, zip)
	}
	// serveJSON answers a JSON list of about n bytes, its metadata
	// carrying continue (a page cut by its limit) or not.
	serveJSON := func(ws, query, cont string, n int) {
		h := e.WithCost(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"5","continue":%q},"items":[{"data":{"a":%q}}]}`,
				cont, strings.Repeat("a", n))
		}))
		r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/configmaps?"+query, nil)
		h.ServeHTTP(httptest.NewRecorder(), r.WithContext(apirequest.WithRequestInfo(in(ws), list)))
	}
	// serveScanned answers a list filtered by labelSelector app=x whose
	// storage evaluated it against objects ConfigMaps, matched of them
	// labelled app=x, each answered as 500 bytes.
	serveScanned := func(ws string, objects, matched int) {
		h := e.WithCost(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			pred := selectors.Wrap(r.Context(), storage.SelectionPredicate{
				Label: labels.SelectorFromSet(labels.Set{"app": "x"}), Field: fields.Everything(),
				GetAttrs: storage.DefaultNamespaceScopedAttr,
			})
			list := &corev1.ConfigMapList{}
			for i := range objects {
				cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i), Namespace: "ns"}}
				if i < matched {
					cm.Labels = map[string]string{"app": "x"}
				}
				if ok, _ := pred.Matches(&cm); ok {
					list.Items = append(list.Items, cm)
				}
			}
			selectors.RecordList(r.Context(), pred, list)
			_, _ = w.Write(bytes.Repeat([]byte("a"), 500*len(list.Items)))
		}))
		r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/configmaps?labelSelector=app%3Dx", nil)
		h.ServeHTTP(httptest.NewRecorder(), r.WithContext(apirequest.WithRequestInfo(in(ws), list)))
	}
	// serveRead answers a list of n bytes, as if its storage had read
	// read bytes of values from etcd for it.
	serveRead := func(ws, query string, read, n int) {
		h := e.WithCost(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			selectors.AddRead(r.Context(), read)
			_, _ = w.Write(bytes.Repeat([]byte("a"), n))
		}))
		r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/configmaps?"+query, nil)
		h.ServeHTTP(httptest.NewRecorder(), r.WithContext(apirequest.WithRequestInfo(in(ws), list)))
	}
	// inState serves within the request's state, whose inflater counts
	// a gzipped answer for WithCost too (one inflation).
	inState := func(h http.Handler) http.Handler { return WithState(h, scheme.NewCodecs(scheme.New())) }
	// serveCut answers a whole list of n bytes to a caller who has gone.
	serveCut := func(ws string, n int) {
		h := e.WithCost(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write(bytes.Repeat([]byte("a"), n))
		}))
		ctx, cancel := context.WithCancel(apirequest.WithRequestInfo(in(ws), list))
		cancel()
		r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/configmaps", nil)
		h.ServeHTTP(httptest.NewRecorder(), r.WithContext(ctx))
	}
	seats := func(ws string, info *apirequest.RequestInfo, query string) uint64 {
		return e.Seats(in(ws), info, query, 40, 100)
	}
	steps := []struct {
		name  string
		do    func()
		ws    string
		info  *apirequest.RequestInfo
		query string
		want  uint64
	}{
		{name: "unknown costs the most", ws: "a", info: list, want: 40},
		{name: "a get costs one", ws: "a", info: &apirequest.RequestInfo{IsResourceRequest: true, Verb: "get", Name: "x", Resource: "configmaps"}, want: 1},
		{name: "a watch from a version costs one", ws: "a", info: &apirequest.RequestInfo{IsResourceRequest: true, Verb: "watch", Resource: "configmaps", Namespace: "ns"}, query: "resourceVersion=7", want: 1},
		{name: "learned: 10 seats' worth, gzipped a thousandfold", do: func() { serve("a", "", 10*BytesPerSeat, true) }, ws: "a", info: list, want: 10},
		{name: "a watch with its initial list costs the list", ws: "a", info: &apirequest.RequestInfo{IsResourceRequest: true, Verb: "watch", Resource: "configmaps", Namespace: "ns"}, want: 10},
		{name: "other workspaces are not charged", ws: "b", info: list, want: 40},
		{name: "a small partial list does not lower it", do: func() { serve("a", "limit=1", 10, false) }, ws: "a", info: list, want: 10},
		{name: "a whole list cut short (the caller hung up) does not set it", do: func() { serveCut("a", 10) }, ws: "a", info: list, want: 10},
		{name: "a whole list sets it", do: func() { serve("a", "", 10, false) }, ws: "a", info: list, want: 1},
		{name: "learned from the state's inflater: 20 seats' worth, gzipped", do: func() { serveVia(inState, "a", "", 20*BytesPerSeat, true) }, ws: "a", info: list, want: 20},
		{name: "set again", do: func() { serve("a", "", 10, false) }, ws: "a", info: list, want: 1},
		{name: "nor teach a first size", do: func() { serveCut("c", 10) }, ws: "c", info: list, want: 40},
		{name: "beyond a tenant's share", do: func() { serve("a", "", 60*BytesPerSeat, false) }, ws: "a", info: list, want: 60},
		{name: "bounded by the most", do: func() { serve("a", "", 1000*BytesPerSeat, false) }, ws: "a", info: list, want: 100},
		// Seventh review #2: what a limited or filtered list scanned is
		// not what it answered.
		{name: "a page cut by its limit teaches no first size", do: func() { serveJSON("d", "limit=1", "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ", 10) }, ws: "d", info: list, want: 40},
		{name: "nor does a filtered list", do: func() { serve("d", "labelSelector=app%3Dx", 10, false) }, ws: "d", info: list, want: 40},
		{name: "nor a limited answer that is not JSON", do: func() { serve("d", "limit=500", 10, false) }, ws: "d", info: list, want: 40},
		{name: "a limited list answered whole (no continue) sets it", do: func() { serveJSON("d", "limit=500", "", 3*BytesPerSeat) }, ws: "d", info: list, want: 4},
		{name: "then a page cut by its limit only raises it", do: func() { serveJSON("d", "limit=1", "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ", 10) }, ws: "d", info: list, want: 4},
		// What storage says a list looked at weighs it: a selector over
		// a few objects teaches a first size of one seat (a tenant who
		// lists by selector alone does not pay her whole share forever);
		// over 50,000 it costs the most, matching nothing; a later
		// selector over few objects does not lower that.
		{name: "a selector over 20 objects teaches one seat", do: func() { serveScanned("e", 20, 2) }, ws: "e", info: list, want: 1},
		{name: "a selector over 50,000 objects, none matching, costs the most", do: func() { serveScanned("f", 50_000, 0) }, ws: "f", info: list, want: 100},
		{name: "a selector over 20 objects does not lower a known size", do: func() { serveScanned("f", 20, 20) }, ws: "f", info: list, want: 100},
		{name: "a selector over 600 objects, 1 matching, raises one seat", do: func() { serveScanned("e", 600, 1) }, ws: "e", info: list, want: 3},
		// Eleventh review: lists at an old resource version, read from
		// etcd, answered small. They learn apart from other lists, by
		// what they read, and a list the cache served does not lower it.
		{name: "an exact list is unknown apart from a known plain list", do: func() { serve("g", "", 10, false) }, ws: "g", info: list, query: "resourceVersion=7&resourceVersionMatch=Exact", want: 40},
		{name: "read from etcd: 85 MiB read, 53 kB answered, costs the most", do: func() { serveRead("g", "resourceVersion=7&resourceVersionMatch=Exact", 85<<20, 53<<10) }, ws: "g", info: list, query: "resourceVersion=7&resourceVersionMatch=Exact", want: 100},
		{name: "the legacy exact form (a limit and a version) shares it", ws: "g", info: list, query: "resourceVersion=9&limit=500", want: 100},
		{name: "a continue shares it", ws: "g", info: list, query: "continue=abc&limit=500", want: 100},
		{name: "an exact list the cache served does not lower it", do: func() { serveRead("g", "resourceVersion=8&resourceVersionMatch=Exact", 0, 10) }, ws: "g", info: list, query: "resourceVersion=7&resourceVersionMatch=Exact", want: 100},
		{name: "nor does it touch the plain list's size", ws: "g", info: list, want: 1},
		{name: "a plain list read from etcd (no watch cache) weighs what it read", do: func() { serveRead("h", "", 3*BytesPerSeat, 10) }, ws: "h", info: list, want: 3},
	}
	for _, s := range steps {
		if s.do != nil {
			s.do()
		}
		if got := seats(s.ws, s.info, s.query); got != s.want {
			t.Errorf("%s: %d seats, want %d", s.name, got, s.want)
		}
	}
}
