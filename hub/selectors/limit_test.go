package selectors

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/endpoints/request"
)

func terms(n int, sep string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = "k" + strings.Repeat("x", i%3)
	}
	return strings.Join(parts, sep)
}

func TestStrip(t *testing.T) {
	l := &Limit{MaxTerms: 3, MaxBytes: 40}
	for _, tc := range []struct {
		name, raw, want, msg string
	}{
		{"no selector", "limit=5&watch=1", "limit=5&watch=1", ""},
		{"within", "labelSelector=a%3Db,c!%3Dd,e&limit=5", "labelSelector=a%3Db,c!%3Dd,e&limit=5", ""},
		{"set values count", "labelSelector=" + url.QueryEscape("a in (x,y,z,w)"), "", "labelSelector has 4 terms"},
		{"escaped commas", "limit=1&labelSelector=a%2Cb%2cc%2Cd&watch=1", "limit=1&watch=1", "labelSelector has 4 terms"},
		{"plain commas", "fieldSelector=a,b,c,d", "", "fieldSelector has 4 terms"},
		{"escaped name", "label%53elector=a,b,c,d&x=1", "x=1", "labelSelector has 4 terms"},
		{"bytes, decoded", "labelSelector=" + strings.Repeat("%61", 40), "labelSelector=" + strings.Repeat("%61", 40), ""},
		{"bytes over", "labelSelector=" + strings.Repeat("a", 41), "", "labelSelector is 41 bytes long"},
		{"empty", "labelSelector=&fieldSelector=+", "labelSelector=&fieldSelector=+", ""},
		{"semicolon is skipped downstream", "labelSelector=a,b,c,d;x", "labelSelector=a,b,c,d;x", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := l.strip(tc.raw)
			if tc.msg == "" {
				if err != nil || got != tc.raw {
					t.Fatalf("strip(%q) = %q, %v; want it unchanged", tc.raw, got, err)
				}
				return
			}
			if err == nil || !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("strip(%q) error %v, want BadRequest %q", tc.raw, err, tc.msg)
			}
			if got != tc.want {
				t.Errorf("strip(%q) = %q, want %q", tc.raw, got, tc.want)
			}
		})
	}
}

func TestTerms(t *testing.T) {
	for sel, want := range map[string]int{"": 0, "  ": 0, "a": 1, "a=b,c": 2, "a in (x,y),!b": 3} {
		if got := Terms(sel); got != want {
			t.Errorf("Terms(%q) = %d, want %d", sel, got, want)
		}
	}
	q, _ := url.ParseQuery("labelSelector=a,b&fieldSelector=metadata.name%3Dx&limit=3")
	if got := QueryTerms(q); got != 3 {
		t.Errorf("QueryTerms = %d, want 3", got)
	}
}

// A refused selector never reaches the inner handler's query, and the
// request is answered 400 where WithRefusal sits.
func TestWithLimitAndRefusal(t *testing.T) {
	s := serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion()
	var sawQuery string
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawQuery = r.URL.RawQuery
		w.WriteHeader(http.StatusOK)
	})
	// Between them stands, in the hub, upstream's chain: the request
	// info filter and authentication.
	h := NewLimit().WithLimit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawQuery = r.URL.RawQuery
		ctx := request.WithRequestInfo(r.Context(), &request.RequestInfo{IsResourceRequest: true, APIVersion: "v1", Verb: "list"})
		WithRefusal(inner, s).ServeHTTP(w, r.WithContext(ctx))
	}))

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/configmaps?limit=2&labelSelector="+terms(1001, ","), nil))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "labelSelector has 1001 terms, more than the 1000 terms this server allows") {
		t.Errorf("over the bound: %d %s", rec.Code, rec.Body)
	}
	if sawQuery != "limit=2" {
		t.Errorf("the chain saw query %q, want the selector taken out", sawQuery)
	}

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/configmaps?labelSelector="+terms(1000, ","), nil))
	if rec.Code != http.StatusOK || !strings.HasPrefix(sawQuery, "labelSelector=k,") {
		t.Errorf("at the bound: %d, query %.40q", rec.Code, sawQuery)
	}
}
