package apiview

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/handler3"
)

const (
	v2Path = "/openapi/v2"
	v3Path = "/openapi/v3"
)

// WithOpenAPI answers /openapi/v2 and /openapi/v3[/<gv>] with the
// documents of the request's workspace. It must run after workspace
// resolution and authorization.
func (o *OpenAPI) WithOpenAPI(delegate http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if (p != v2Path && p != v3Path && !strings.HasPrefix(p, v3Path+"/")) ||
			(r.Method != http.MethodGet && r.Method != http.MethodHead) {
			delegate.ServeHTTP(w, r)
			return
		}
		s, err := o.servedFor(r)
		if err != nil {
			klog.ErrorS(err, "Building the workspace's OpenAPI")
			responsewriters.InternalError(w, r, err)
			return
		}
		prefix := clusterPrefix(r.Context())
		switch {
		case p == v2Path:
			s.v2.ServeHTTP(w, r)
		case p == v3Path:
			s.serveIndex(w, r, prefix)
		default:
			if !s.gvs[strings.TrimPrefix(p, v3Path+"/")] {
				// kube-aggregator's answer for a group-version no
				// server publishes: 404 with an empty body.
				w.WriteHeader(http.StatusNotFound)
				return
			}
			s.v3.HandleGroupVersion(&relocating{ResponseWriter: w, prefix: prefix}, r)
		}
	})
}

// serveIndex answers the OpenAPI v3 index with URLs under the prefix the
// caller addressed the workspace with: clients fetch them as given
// (client-go's openapi client resolves them against the host alone), so
// without it they would read root's documents.
func (s *served) serveIndex(w http.ResponseWriter, r *http.Request, prefix string) {
	c := internalGet(http.HandlerFunc(s.v3.HandleDiscovery), r, "")
	var index handler3.OpenAPIV3Discovery
	if err := json.Unmarshal(c.body.Bytes(), &index); err != nil {
		responsewriters.InternalError(w, r, err)
		return
	}
	for gv, item := range index.Paths {
		item.ServerRelativeURL = prefix + item.ServerRelativeURL
		index.Paths[gv] = item
	}
	body, err := json.Marshal(index)
	if err != nil {
		responsewriters.InternalError(w, r, err)
		return
	}
	w.Header().Set("Etag", strconv.Quote(etagOf(body)))
	w.Header().Set("Content-Type", "application/json")
	http.ServeContent(w, r, v3Path, time.Time{}, bytes.NewReader(body))
}

// relocating puts the workspace prefix in front of the redirects
// handler3 sends to a group-version's current hash.
type relocating struct {
	http.ResponseWriter
	prefix string
}

func (w *relocating) WriteHeader(code int) {
	if loc := w.Header().Get("Location"); code >= 300 && code < 400 && strings.HasPrefix(loc, v3Path+"/") {
		w.Header().Set("Location", w.prefix+loc)
	}
	w.ResponseWriter.WriteHeader(code)
}
