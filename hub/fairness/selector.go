package fairness

import (
	"net/http"
	"net/url"
	"runtime"

	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/selectors"
)

// What a request's selectors cost its tenant (fifth outside review,
// #16-#18: 40 lists with an 80,000-term labelSelector matching nothing
// took 2.5 CPU-seconds each, and weighed one seat and a few bytes,
// their answer's). hub/selectors bounds a selector's size before it is
// parsed; within that bound, what it costs is charged here, in the units
// the hub already bounds per tenant:
//
//   - Its parses (kube-apiserver parses a list's or watch's selector
//     when it builds the request's info, then in the handler, and for
//     authorization): SelectorTermBytes of the tenant's traffic budget a
//     term, at admission, whether the request is then served or refused.
//   - Its evaluation: SelectorCheckBytes a term evaluated against one
//     object or event, charged as the watch cache evaluates it (the
//     storage decorator wraps the predicate, selectors.Wrap). A list's
//     evaluation puts its tenant in debt as its answer's bytes do, and her
//     next requests wait; a watch whose tenant is in debt is ended, as one
//     that writes while she is in debt is, even when it sends nothing.
//   - Its width: a list or watch with a selector is at least one seat
//     per SelectorTermsPerSeat terms, so that a tenant runs few heavy
//     selectors at once within her share, and (wider than one seat) it
//     evaluates in a CPU turn (cpu.go), never on the CPU kept for small
//     requests.
//
// The rates come from the hub's own measures on 2 cores: a term
// evaluated against one object's labels costs about 30 ns, about what
// encoding and sending 4 bytes of an answer costs; a parse costs about
// 1.6 µs a term, three times over.
//
// A watch's event costs more than its check: the watch cache hands each
// event to every watcher of its collection (a channel send, a goroutine
// woken, an HTTP/2 frame) before any selector is looked at, and the cost
// of that fan-out to other tenants is not in the bytes. So each event a
// watch evaluates or is sent is charged at least WatchEventBytes at the
// default budget, 1/WatchEventsPerCPU of a CPU's second, and the same
// share of a budget set otherwise (watchEventBytes; eighth outside
// review, B1: 500 watches of one collection beside 250 writes a second
// took another tenant from 1,246 to 36-51 requests a second; their
// events, ~450 bytes, kept her within her budget, and a selector matching
// nothing was charged 4 bytes an event and never ended). An informer's
// watch seeing 100 events a second costs 200 KiB a second of the default
// 8 MiB a CPU.
const (
	SelectorCheckBytes   = 4
	SelectorTermBytes    = 1 << 10
	SelectorTermsPerSeat = 64
	WatchEventsPerCPU    = 4096
	WatchEventBytes      = TrafficBytesPerCPU / WatchEventsPerCPU
)

// watchEventBytes is the least a watch event costs on a budget of
// perSecond bytes a second (all CPUs).
func watchEventBytes(perSecond float64) int64 {
	return max(1, int64(perSecond/float64(runtime.GOMAXPROCS(0))/WatchEventsPerCPU))
}

// selectorTerms counts the terms of a list's or watch's selectors: the
// requests whose selectors the hub parses and evaluates.
func selectorTerms(info *request.RequestInfo, rawQuery string) int {
	if rawQuery == "" || !info.IsResourceRequest || (info.Verb != "list" && info.Verb != "watch") {
		return 0
	}
	q, _ := url.ParseQuery(rawQuery)
	return selectors.QueryTerms(q)
}

// selectorSeats is the least width of a request with terms selector terms.
func selectorSeats(terms int, most uint64) uint64 {
	if terms <= SelectorTermsPerSeat {
		return 1
	}
	return min(uint64((terms+SelectorTermsPerSeat-1)/SelectorTermsPerSeat), most)
}

// headBytes is what a request's head weighs in its tenant's traffic
// budget: its target (path and query) and its header fields past an
// ordinary head's size. A 100 KB query answered by a tiny
// /version was never charged (fifth review, #19: 40 such GETs at once,
// 500 a second, and another tenant's throughput fell to 28%).
func headBytes(r *http.Request) int64 {
	n := int64(len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4)
	if r.RequestURI == "" {
		n += int64(len(r.URL.Path) + len(r.URL.RawQuery))
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			n += int64(len(k) + len(v) + 4)
		}
	}
	// An ordinary head is the request's to have, as it always was; past
	// it, a byte of head costs the hub more than a byte of answer: HTTP/2
	// decodes it (Huffman, about 100 MB/s on one core) before any
	// handler, and several filters parse the query again. So each byte
	// past ordinaryHead weighs HeadByteWeight.
	return HeadByteWeight * max(0, n-ordinaryHead)
}

// HeadByteWeight is what a byte of a request's head past ordinaryHead
// weighs in the traffic budget.
const HeadByteWeight = 4

// ordinaryHead is the size of an ordinary request's head (a bearer
// token, a few headers, a short query), not charged.
const ordinaryHead = 4 << 10

// ChargeSelector charges the request's selector evaluation to its
// tenant (selectors.Charger); an exempt request, with no meter, is not
// charged. A watch whose tenant is then in debt is ended: its events are
// evaluated whether or not any is ever sent, so ending it on its next
// write alone would let a selector that matches nothing evaluate on.
func (st *state) ChargeSelector(checks int64) {
	m := st.meter.Load()
	if m == nil {
		return
	}
	per := int64(SelectorCheckBytes)
	if st.watch {
		per = max(per, m.eventBytes())
	}
	if m.charge(checks*per) && st.watch && st.cancel != nil {
		if st.selectorEnded.CompareAndSwap(false, true) {
			klog.V(2).InfoS("Ending a watch of a tenant over its traffic budget by its selector", "tenant", st.tenant)
		}
		st.cancel()
	}
}

var _ selectors.Charger = (*state)(nil)
