package tenantfilterbench

import (
	"testing"
	"time"
)

func TestParseRequestTotals(t *testing.T) {
	text := `# HELP apiserver_request_total x
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="namespaces",scope="cluster",subresource="",verb="LIST",version="v1"} 7
apiserver_request_total{code="201",component="apiserver",dry_run="",group="authentication.k8s.io",resource="tokenreviews",scope="cluster",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 40
apiserver_request_totalx{resource="namespaces"} 100
`
	c, err := parseRequestTotals(text)
	if err != nil {
		t.Fatal(err)
	}
	if c.total != 10 || c.tokenReviews != 3 {
		t.Fatalf("got %+v, want total 10 (non-resource scrapes excluded), tokenReviews 3", c)
	}
	if got := c.sub(requestCounts{}).top(1); got != "LIST namespaces: 7" {
		t.Fatalf("top = %q", got)
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{0, 1}, {50, 3}, {100, 5}} {
		if got := percentile(ds, tc.p); got != tc.want {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want)
		}
	}
}
