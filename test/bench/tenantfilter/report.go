package tenantfilterbench

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

type reportData struct {
	tenants, namespaces, requests     int
	direct, directSel, owner, groupie *latencies
	callsPerReq, tokenReviewsPerReq   float64
	rawDelta, background              float64
	deltaTop                          string
	coldCalls, coldTokenReviews       float64
	rssKB                             int64
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func ratio(a, b time.Duration) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

func report(w io.Writer, r reportData) {
	fmt.Fprintf(w, "\nTenant filter benchmark: %d tenants, %d namespaces, %d requests per series\n\n", r.tenants, r.namespaces, r.requests)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "series\tmedian\tp90\tmedian vs direct unfiltered\tmedian vs direct same selector")
	dm, sm := percentile(r.direct.ds, 50), percentile(r.directSel.ds, 50)
	row := func(name string, l *latencies) {
		m := percentile(l.ds, 50)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, ms(m), ms(percentile(l.ds, 90)), ratio(m, dm), ratio(m, sm))
	}
	row("direct list, admin, all namespaces (kube-apiserver)", r.direct)
	row("direct list, admin, the owner's selector (kube-apiserver)", r.directSel)
	row("proxy: owner lists own namespaces", r.owner)
	row("proxy: user in 200 groups lists own namespaces", r.groupie)
	tw.Flush()
	fmt.Fprintf(w, "\ndownstream calls per filtered request once warm: %.3f (raw delta %.0f over %d requests, idle background %.1f subtracted)\n",
		r.callsPerReq, r.rawDelta, r.requests, r.background)
	fmt.Fprintf(w, "  where the delta went: %s\n", r.deltaTop)
	fmt.Fprintf(w, "TokenReviews per filtered request once warm: %.3f (capsule-proxy: >= 3)\n", r.tokenReviewsPerReq)
	fmt.Fprintf(w, "first request with an unseen token: %.0f downstream calls, %.0f TokenReviews\n", r.coldCalls, r.coldTokenReviews)
	fmt.Fprintf(w, "provider RSS once warm: %.1f MiB\n", float64(r.rssKB)/1024)
}
