package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// inProcess is the transport of the lease client (hub/leases): it serves
// each request with the hub's own handler chain, in this process, in the
// caller's goroutine, instead of over the loopback TCP connection.
//
// Why: on a hub whose CPU a tenant's requests take (review 2 of issue 24,
// B-A to B-C), every goroutine that wakes waits its turn behind them, and
// a renewal over loopback wakes many (the client's HTTP/2 writer and
// reader, the server's connection reader and writer, TLS on both sides):
// measured, 0.2–0.5 s of a 1–1.6 s renewal passed outside the handler.
// Nothing is skipped: authentication (the loopback token), authorization,
// admission, flow control and the timeout filter all run as for any
// request, so the fencing argument of hub/leases holds unchanged.
//
// Until the server is built (set), requests go over loopback as before.
type inProcess struct {
	handler  atomic.Pointer[http.Handler]
	loopback http.RoundTripper
}

// set makes h serve every request from now on.
func (t *inProcess) set(h http.Handler) { t.handler.Store(&h) }

// inProcessConfig is loopback with t as its transport; t falls back to
// loopback's own.
func inProcessConfig(loopback *rest.Config) (*rest.Config, *inProcess, error) {
	rt, err := rest.TransportFor(loopback)
	if err != nil {
		return nil, nil, fmt.Errorf("loopback transport: %w", err)
	}
	t := &inProcess{loopback: rt}
	cfg := rest.CopyConfig(loopback)
	// rest refuses TLS options beside a transport of one's own; the
	// fallback carries them, and the bearer token is still added by
	// rest's wrappers.
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	cfg.Transport = t
	return cfg, t, nil
}

func (t *inProcess) RoundTrip(req *http.Request) (resp *http.Response, err error) {
	hp := t.handler.Load()
	if hp == nil {
		return t.loopback.RoundTrip(req)
	}
	// net/http recovers a handler's panic and cuts that one request; so
	// must this, or a panic would take the hub down. The timeout filter
	// panics with http.ErrAbortHandler on purpose when a request times
	// out after its answer began.
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fmt.Errorf("in-process request %s %s aborted: %v", req.Method, req.URL.Path, p)
		}
	}()
	// A request as the server would have read it.
	in := req.Clone(req.Context())
	in.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	in.RequestURI = in.URL.RequestURI()
	in.Host = req.URL.Host
	in.RemoteAddr = "127.0.0.1:0"
	in.Proto, in.ProtoMajor, in.ProtoMinor = "HTTP/1.1", 1, 1
	if in.Body == nil {
		in.Body = http.NoBody
	}
	w := &recorder{header: http.Header{}}
	(*hp).ServeHTTP(w, in)
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", w.code, http.StatusText(w.code)),
		StatusCode:    w.code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		Body:          io.NopCloser(bytes.NewReader(w.body.Bytes())),
		ContentLength: int64(w.body.Len()),
		Request:       req,
	}, nil
}

// recorder is the ResponseWriter of an in-process request: the lease
// client's answers are small, so the body is kept whole. (Not
// net/http/httptest: it registers a command-line flag.)
type recorder struct {
	header, sent http.Header
	code         int
	body         bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.code != 0 {
		return
	}
	r.code = code
	r.sent = r.header.Clone()
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		if r.header.Get("Content-Type") == "" && len(b) > 0 {
			r.header.Set("Content-Type", http.DetectContentType(b))
		}
		r.WriteHeader(http.StatusOK)
	}
	return r.body.Write(b)
}

// Flush implements http.Flusher, which some filters expect.
func (r *recorder) Flush() {
	if r.code == 0 {
		r.WriteHeader(http.StatusOK)
	}
}
