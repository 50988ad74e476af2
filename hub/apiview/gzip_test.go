package apiview

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// TestGzipOnce: OpenAPI v2 is gzipped once per form and version, and
// answers what kube-openapi's handler answers.
func TestGzipOnce(t *testing.T) {
	doc := &spec.Swagger{SwaggerProps: spec.SwaggerProps{Swagger: "2.0", Info: &spec.Info{InfoProps: spec.InfoProps{Title: "t", Version: "v"}},
		Definitions: spec.Definitions{"a": spec.Schema{SchemaProps: spec.SchemaProps{Description: string(bytes.Repeat([]byte("x"), 100_000))}}}}}
	mux := http.NewServeMux()
	handler.NewOpenAPIService(doc).RegisterOpenAPIVersionedService(v2Path, mux)
	gets := 0 // full GETs reaching kube-openapi's handler
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets++
		}
		mux.ServeHTTP(w, r)
	})
	g := newGzipOnce(counted)
	get := func(header map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, v2Path, nil)
		for k, v := range header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		return w
	}
	plain := get(nil)
	if plain.Code != http.StatusOK || plain.Header().Get("Content-Encoding") != "" || plain.Body.Len() < 100_000 {
		t.Fatalf("plain: %d %q, %d bytes", plain.Code, plain.Header().Get("Content-Encoding"), plain.Body.Len())
	}
	etag := plain.Header().Get("Etag")
	unzip := func(w *httptest.ResponseRecorder) []byte {
		t.Helper()
		zr, err := gzip.NewReader(w.Body)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tt := range []struct {
		name     string
		header   map[string]string
		code     int
		encoding string
		gets     int // full GETs by then
	}{
		{name: "first gzip answer: compressed", header: map[string]string{"Accept-Encoding": "gzip"}, code: http.StatusOK, encoding: "gzip", gets: 2},
		{name: "second: from what was kept", header: map[string]string{"Accept-Encoding": "gzip, deflate"}, code: http.StatusOK, encoding: "gzip", gets: 2},
		{name: "held already", header: map[string]string{"Accept-Encoding": "gzip", "If-None-Match": etag}, code: http.StatusNotModified, gets: 2},
		{name: "held, among others", header: map[string]string{"Accept-Encoding": "gzip", "If-None-Match": `"x", W/` + etag}, code: http.StatusNotModified, gets: 2},
		{name: "any held", header: map[string]string{"Accept-Encoding": "gzip", "If-None-Match": "*"}, code: http.StatusNotModified, gets: 2},
		{name: "another held", header: map[string]string{"Accept-Encoding": "gzip", "If-None-Match": `"x"`}, code: http.StatusOK, encoding: "gzip", gets: 2},
		{name: "gzip refused", header: map[string]string{"Accept-Encoding": "gzip;q=0"}, code: http.StatusOK, gets: 3},
		{name: "protobuf is a form of its own", header: map[string]string{"Accept-Encoding": "gzip", "Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}, code: http.StatusOK, encoding: "gzip", gets: 4},
		{name: "and kept too", header: map[string]string{"Accept-Encoding": "gzip", "Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}, code: http.StatusOK, encoding: "gzip", gets: 4},
	} {
		w := get(tt.header)
		if w.Code != tt.code || w.Header().Get("Content-Encoding") != tt.encoding || gets != tt.gets {
			t.Errorf("%s: %d %q after %d GETs, want %d %q after %d", tt.name, w.Code, w.Header().Get("Content-Encoding"), gets, tt.code, tt.encoding, tt.gets)
			continue
		}
		if tt.encoding == "gzip" && tt.header["Accept"] == "" {
			if b := unzip(w); !bytes.Equal(b, plain.Body.Bytes()) || w.Header().Get("Etag") != etag {
				t.Errorf("%s: not the plain document (%d bytes, etag %q)", tt.name, len(b), w.Header().Get("Etag"))
			}
		}
	}
}
