package fairness

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
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
	tenant         string
	// watchRelease ends the count of an admitted watch; RegisterWatch
	// hands it to upstream's filter, which calls it when the watch ends.
	watchRelease    func()
	watchRegistered bool
	refused         bool
	gv              schema.GroupVersion
	// forbidden, when set, runs once before a 403 is written: it paces
	// the tenant's denials (denials.go) while the request holds its seat.
	forbidden func()
	// cpu is the request's turns of CPU-heavy work (cpu.go): given back
	// around each write and read. Nil for watches and exempt callers.
	cpu *hold
}

type stateKey struct{}

func stateFrom(ctx context.Context) *state {
	if st, ok := ctx.Value(stateKey{}).(*state); ok {
		return st
	}
	return &state{}
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
		st := &state{rawQuery: r.URL.RawQuery, contentLength: r.ContentLength}
		if r.Body != nil && r.Body != http.NoBody {
			// What was read, not what was announced: a body that never
			// comes costs its tenant seats, not traffic.
			r.Body = &countingBody{ReadCloser: r.Body, st: st}
		}
		rw := responsewriter.WrapForHTTP1Or2(&refusalWriter{ResponseWriter: w, st: st, r: r, s: s})
		handler.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), stateKey{}, st)))
	})
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
		f()
	}
	if code == http.StatusTooManyRequests && w.st.refused && !w.swallow {
		// Upstream's plain-text answer to a refusal of ours: replace it.
		w.swallow = true
		h := w.ResponseWriter.Header()
		h.Del("Content-Type")
		h.Del("X-Content-Type-Options")
		tooMany(w.ResponseWriter, w.r, w.s, w.st.gv)
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *refusalWriter) Write(b []byte) (int, error) {
	if w.swallow {
		return len(b), nil
	}
	w.st.cpu.pause()
	n, err := w.ResponseWriter.Write(b)
	w.st.cpu.resume(w.st.sent.Add(int64(n)) + w.st.received.Load())
	return n, err
}

// countingBody counts the bytes of a request body as they are read, and
// gives the request's CPU turn back while it waits for them.
type countingBody struct {
	io.ReadCloser
	st *state
}

func (b *countingBody) Read(p []byte) (int, error) {
	b.st.cpu.pause()
	n, err := b.ReadCloser.Read(p)
	b.st.cpu.resume(b.st.received.Add(int64(n)) + b.st.sent.Load())
	return n, err
}
