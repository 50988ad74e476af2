package fairness

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/hangup"
	"github.com/wharfhub/wharf/hub/selectors"
)

// state is what the Controller learns of one request: upstream's filter
// hands the Controller neither the response writer nor the URL, and
// registers a watch in a call of its own.
type state struct {
	rawQuery string
	// contentLength is the body's announced length, -1 when unknown
	// (chunked): a write is weighed by it before its body is read.
	contentLength int64
	// sent and received count the response bytes written and the body
	// bytes read (traffic.go); the handler may run in a goroutine of its
	// own (timeouts).
	sent, received atomic.Int64
	// meter charges the bytes to the tenant's traffic budget as they
	// move, once the request is admitted (traffic.go).
	meter atomic.Pointer[meter]
	// watch: each event is sent only while the tenant is not in debt.
	// paced: a write that leaves the tenant in debt waits for the debt
	// (provider routes, whose sizes are not learned). plain: a gzipped
	// answer is counted as the bytes it inflates to.
	watch, paced, plain bool
	// inflate counts what a gzipped answer inflates to, once, for both
	// who want it: the traffic budget (meter) and, when sized, the
	// Estimator (WithCost), which reads the same count (inflatedSize).
	inflate atomic.Pointer[inflater]
	sized   atomic.Bool
	tenant  string
	// upgrade is the traffic budget an upgraded connection of the
	// request is charged to, as tenant, once the tenant is named
	// (upgrade.go); nil for exempt callers and without a budget.
	upgrade *traffic
	// watchRelease ends the count of an admitted watch; RegisterWatch
	// hands it to upstream's filter, which calls it when the watch ends.
	watchRelease    func()
	watchRegistered bool
	watchEnded      bool
	// cancel ends the request's context: a watch whose tenant its
	// selector's evaluation put in debt is ended (selector.go).
	cancel        context.CancelFunc
	selectorEnded atomic.Bool
	// head is the request's target and header fields in bytes, charged
	// to its tenant's traffic budget at admission (selector.go).
	head    int64
	refused bool
	gv      schema.GroupVersion
	// forbidden, when set, runs once before a 403 is written: it paces
	// the tenant's denials (denials.go) while the request holds its seat.
	forbidden func()
	// atOnce: the request's 429 was not held (tarpit.go), so it closes
	// its connection (hangup.UnlessHeld). Set by the Controller, or by a
	// limit inside the chain (RefusedAtOnce).
	atOnce atomic.Bool
	// cpu is the request's turns of CPU-heavy work (cpu.go): given back
	// around each write and read. Nil for watches and exempt callers.
	cpu *hold
	// delegation is the HeaderDelegation the request came with;
	// delegations, set while it holds seats, opens one for a provider's
	// calls back when it is relayed (delegation.go).
	delegation  string
	delegations *delegations
	// delegated ends the delegations the request opened; once its seats
	// are given back (a request whose handler outlives its timeout),
	// those end and no more are opened (seatsReturned).
	delegationMu  sync.Mutex
	delegated     []func()
	seatsReturned bool
}

type stateKey struct{}

func stateFrom(ctx context.Context) *state {
	if st, ok := ctx.Value(stateKey{}).(*state); ok {
		return st
	}
	return &state{}
}

// noteHeld notes whether the Controller's refusal was held.
func (st *state) noteHeld(held bool) {
	st.atOnce.Store(!held)
}

// RefusedAtOnce notes that the request's 429, which a limit inside the
// handler chain is about to give (the event rate, hub/quota), is not
// held: its connection closes as the Controller's refusals not held do
// (hangup.UnlessHeld). Outside WithState it does nothing.
func RefusedAtOnce(ctx context.Context) {
	if st, ok := ctx.Value(stateKey{}).(*state); ok {
		st.atOnce.Store(true)
	}
}

func (st *state) refuse(info *request.RequestInfo) {
	st.refused = true
	st.gv = schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
}

// WithState must wrap upstream's handler chain (outside authentication,
// where the Controller runs). It gives the Controller its per-request
// state, and answers the Controller's refusals with kube-apiserver's 429
// Status and Retry-After, as the hub always has, where upstream's filter
// would write a plain-text body.
func WithState(handler http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Counted before compression: the hub gzips large answers, and
		// building the JSON, not sending it, is what they cost (third
		// review, C-H: 260 MB/s built, 0.2 MB/s charged).
		st := &state{rawQuery: r.URL.RawQuery, contentLength: r.ContentLength, plain: true, head: headBytes(r)}
		// Read, and kept from the handlers: only the Controller uses it,
		// and only a live one of the request's own tenant (delegation.go).
		if tok := r.Header.Get(HeaderDelegation); tok != "" {
			st.delegation = tok
			r.Header.Del(HeaderDelegation)
		}
		if r.Body != nil && r.Body != http.NoBody {
			// What was read, not what was announced: a body that never
			// comes costs its tenant seats, not traffic.
			r.Body = &countingBody{ReadCloser: r.Body, st: st}
		}
		rw := responsewriter.WrapForHTTP1Or2(&refusalWriter{ResponseWriter: w, st: st, r: r, s: s})
		defer st.finish()
		ctx, cancel := context.WithCancel(context.WithValue(r.Context(), stateKey{}, st))
		defer cancel()
		st.cancel = cancel
		// Selector evaluation in storage is charged to the request's
		// tenant (selector.go, hub/selectors).
		ctx = selectors.WithCharger(ctx, st)
		handler.ServeHTTP(rw, r.WithContext(ctx))
	})
}

// finish charges what a gzipped answer inflated to and ends the
// request's count in flight.
func (st *state) finish() {
	if f := st.inflate.Load(); f != nil {
		f.close(st.meter.Load())
	}
	st.meter.Load().close()
}

type refusalWriter struct {
	http.ResponseWriter
	st      *state
	r       *http.Request
	s       runtime.NegotiatedSerializer
	swallow bool
}

func (w *refusalWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *refusalWriter) WriteHeader(code int) {
	if code == http.StatusForbidden && w.st.forbidden != nil {
		f := w.st.forbidden
		w.st.forbidden = nil
		// Paced without a turn.
		w.st.cpu.pause()
		f()
		w.st.cpu.resume(w.st.sent.Load() + w.st.received.Load())
	}
	if code == http.StatusTooManyRequests && !w.swallow {
		h := w.ResponseWriter.Header()
		hangup.UnlessHeld(h, !w.st.atOnce.Load())
		if w.st.refused {
			// Upstream's plain-text answer to a refusal of ours: replace it.
			w.swallow = true
			h.Del("Content-Type")
			h.Del("X-Content-Type-Options")
			tooMany(w.ResponseWriter, w.r, w.s, w.st.gv)
			return
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *refusalWriter) Write(b []byte) (int, error) {
	if w.swallow {
		return len(b), nil
	}
	st := w.st
	m := st.meter.Load()
	if st.watch && !m.take(max(int64(len(b)), m.eventBytes()), true) {
		// Ended as kube-apiserver ends a watcher that cannot keep up:
		// the client watches again and meets the traffic wait.
		if !st.watchEnded {
			st.watchEnded = true
			klog.V(2).InfoS("Ending a watch of a tenant over its traffic budget", "tenant", st.tenant)
		}
		return 0, errOverBudget
	}
	f := st.inflate.Load()
	if f == nil && st.plain && !st.watch && (m != nil || st.sized.Load()) && w.ResponseWriter.Header().Get("Content-Encoding") == "gzip" {
		f = newInflater(m)
		st.inflate.Store(f)
	}
	st.cpu.pause()
	n, err := w.ResponseWriter.Write(b)
	paced := !st.watch && f == nil && st.paced
	if paced {
		// Slowed to its tenant's rate without a turn.
		m.pace(w.r.Context(), int64(n))
	}
	// Inflating a gzipped answer to count it is CPU work: under the turn.
	st.cpu.resume(st.sent.Add(int64(n)) + st.received.Load())
	switch {
	case st.watch, paced:
	case f != nil:
		f.write(b[:n])
	default:
		m.take(int64(n), false)
	}
	return n, err
}

// errOverBudget ends a watch whose tenant is in debt.
var errOverBudget = errors.New("the tenant is over its traffic budget")

// countingBody counts the bytes of a request body as they are read, and
// gives the request's CPU turn back while it waits for them.
type countingBody struct {
	io.ReadCloser
	st *state
}

func (b *countingBody) Read(p []byte) (int, error) {
	b.st.cpu.pause()
	n, err := b.ReadCloser.Read(p)
	received := b.st.received.Add(int64(n))
	b.st.meter.Load().take(int64(n), false)
	b.st.cpu.resume(received + b.st.sent.Load())
	return n, err
}

// inflater counts what a gzipped answer inflates to, on the side, and
// charges it as it goes (to no one when its meter is nil).
type inflater struct {
	pipe       *io.PipeWriter
	done       chan int64
	compressed atomic.Int64

	once     sync.Once
	inflated int64 // once
}

func newInflater(m *meter) *inflater {
	pr, pw := io.Pipe()
	f := &inflater{pipe: pw, done: make(chan int64, 1)}
	go func() {
		var n int64
		if zr, err := gzip.NewReader(pr); err == nil {
			n, _ = io.Copy(meterWriter{m}, zr)
		}
		_, _ = io.Copy(io.Discard, pr)
		f.done <- n
	}()
	return f
}

func (f *inflater) write(b []byte) {
	f.compressed.Add(int64(len(b)))
	if len(b) > 0 {
		_, _ = f.pipe.Write(b)
	}
}

// total ends the answer and waits for what it inflated to; what is
// written after is charged as sent.
func (f *inflater) total() int64 {
	f.once.Do(func() {
		_ = f.pipe.Close()
		f.inflated = <-f.done
	})
	return f.inflated
}

// close charges, past the inflated count, what an answer that inflated
// to less than it sent (cut short, or not gzip after all) sent.
func (f *inflater) close(m *meter) {
	if n, sent := f.total(), f.compressed.Load(); sent > n {
		m.take(sent-n, false)
	}
}

// inflatedSize is what the gzipped answer of the request inflated to, as
// its state counted it, and false when the state inflated nothing.
func (st *state) inflatedSize() (int64, bool) {
	if f := st.inflate.Load(); f != nil {
		return f.total(), true
	}
	return 0, false
}

type meterWriter struct{ m *meter }

func (w meterWriter) Write(b []byte) (int, error) {
	w.m.take(int64(len(b)), false)
	return len(b), nil
}
