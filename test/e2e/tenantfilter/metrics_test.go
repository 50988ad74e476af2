package tenantfilter

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestMetrics: both series are populated through the real listener, with
// route templates (never names) in the path label.
func TestMetrics(t *testing.T) {
	p := startProxy(t, proxyOptions{TLS: true})
	tnt := createTenant(t, newTenant(uniq("met"), userOwner("dave")))
	ns := uniq("met-ns")
	createTenantNamespace(t, tnt, ns, linkCapsule)
	eventually(t, time.Minute, func() error {
		if code, body := p.Do(t, "dave", http.MethodGet, "/api/v1/namespaces/"+ns, "", nil); code != 200 {
			return fmt.Errorf("get ns: %d %s", code, body)
		}
		return nil
	})
	// The list is filtered by dave's tenants, which the proxy learns from
	// its informers: wait for the 200 the metric counts (CI once read
	// none).
	eventually(t, time.Minute, func() error {
		if code, body := p.Do(t, "dave", http.MethodGet, "/api/v1/namespaces", "", nil); code != 200 {
			return fmt.Errorf("list namespaces: %d %s", code, body)
		}
		return nil
	})
	p.Do(t, "", http.MethodGet, "/api/v1/namespaces", "", nil) // 401
	// The tenant's grants in the new namespace may land after the
	// namespace is readable: wait for the list's 200 the metric counts.
	eventually(t, time.Minute, func() error {
		if code, body := p.Do(t, "dave", http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps", "", nil); code != 200 {
			return fmt.Errorf("list configmaps: %d %s", code, body)
		}
		return nil
	})

	// The counters move once a request's answer is written: the last
	// one may reach the client first.
	var text string
	eventually(t, time.Minute, func() error {
		resp, err := http.Get(p.MetricsURL + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		text = string(b)
		for _, want := range []string{
			`wharf_tenant_filter_requests_total{path="/api/v1/namespaces",status="200"}`,
			`wharf_tenant_filter_requests_total{path="/api/v1/namespaces",status="401"}`,
			`wharf_tenant_filter_requests_total{path="/api/v1/namespaces/{name}",status="200"}`,
			`wharf_tenant_filter_requests_total{path="/api/v1/namespaces/{namespace}/{resource}",status="200"}`,
			`wharf_tenant_filter_response_time_seconds_count{path="/api/v1/namespaces"}`,
			`wharf_tenant_filter_response_time_seconds_bucket{path="/api/v1/namespaces/{name}",le=`,
		} {
			if !strings.Contains(text, want) {
				return fmt.Errorf("metrics lack %s", want)
			}
		}
		return nil
	})
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "wharf_tenant_filter_") && strings.Contains(line, ns) {
			t.Errorf("a raw name leaked into a label: %s", line)
		}
	}
	// Health endpoints answer on both listeners without credentials.
	for _, u := range []string{p.MetricsURL + "/healthz", p.URL + "/healthz", p.URL + "/readyz"} {
		r, err := p.httpClient().Get(u)
		if err != nil || r.StatusCode != 200 {
			t.Errorf("%s: %v %v", u, err, r)
		}
		if r != nil {
			r.Body.Close()
		}
	}
}
