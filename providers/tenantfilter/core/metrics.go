package core

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// Metrics holds the tenant filter's two series. Both fronts (standalone and
// plugin) wrap the core in Metrics.Middleware, so both modes populate them.
// It registers into the registry it is given: no global state, so tests and
// several instances in one process do not collide.
type Metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewMetrics registers wharf_tenant_filter_requests_total{path,status} and
// wharf_tenant_filter_response_time_seconds{path} in reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_tenant_filter_requests_total",
			Help: "Requests served by the tenant filter, by route template and HTTP status.",
		}, []string{"path", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wharf_tenant_filter_response_time_seconds",
			Help:    "Time to serve a request (a watch: its whole life), by route template.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"path"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register tenant filter metrics: %w", err)
		}
	}
	return m, nil
}

// Middleware records both series for every request next serves. The path
// label is a route template (RouteTemplate), never the raw URL, so that
// object names cannot blow up the series count.
func (m *Metrics) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		path := RouteTemplate(r.URL.Path)
		defer func() {
			code := sw.code
			if code == 0 {
				code = http.StatusOK
			}
			m.requests.WithLabelValues(path, strconv.Itoa(code)).Inc()
			m.latency.WithLabelValues(path).Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(sw, r)
	})
}

// statusWriter remembers the status code and keeps Flush and Hijack
// working (watches stream, exec and port-forward upgrade).
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := s.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("response writer cannot hijack")
	}
	if s.code == 0 {
		s.code = http.StatusSwitchingProtocols
	}
	return h.Hijack()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

var templateInfo = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// knownNonResource are the non-resource paths kept literally; any other is
// "other", so arbitrary URLs add no series.
var knownNonResource = sets.New("/api", "/apis", "/version", "/healthz", "/readyz", "/livez", "/openapi/v2", "/openapi/v3", "/metrics")

// RouteTemplate maps a downstream-relative path to its route template:
// /api/v1/namespaces, /api/v1/namespaces/{name},
// /api/v1/namespaces/{namespace}/{resource}/{name},
// /apis/{group}/{version}/{resource}, and so on. Core resources keep the
// version; namespaces stay literal because they are the filter's main
// route; every name, group and other resource is a placeholder.
func RouteTemplate(path string) string {
	r, err := http.NewRequest(http.MethodGet, "http://x"+path, nil)
	if err != nil {
		return "other"
	}
	info, err := templateInfo.NewRequestInfo(r)
	if err != nil || !info.IsResourceRequest {
		if knownNonResource.Has(path) {
			return path
		}
		// Discovery of one group or group version.
		if rest, ok := strings.CutPrefix(path, "/apis/"); ok && rest != "" {
			switch strings.Count(strings.TrimSuffix(rest, "/"), "/") {
			case 0:
				return "/apis/{group}"
			case 1:
				return "/apis/{group}/{version}"
			}
		}
		if path == "/api/v1" {
			return path
		}
		return "other"
	}
	t := "/apis/{group}/{version}"
	if info.APIPrefix == "api" {
		t = "/api/" + info.APIVersion
		if info.APIVersion != "v1" {
			t = "/api/{version}"
		}
	}
	resource := "{resource}"
	if info.Resource == "namespaces" && info.APIPrefix == "api" {
		resource = "namespaces"
	}
	if info.Namespace != "" && info.Resource != "namespaces" {
		t += "/namespaces/{namespace}"
	}
	t += "/" + resource
	if info.Name != "" {
		t += "/{name}"
	}
	if info.Subresource != "" {
		t += "/{subresource}"
	}
	return t
}
