package proxybody

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// pastDeadline is a read deadline already reached: it ends a read in
// progress at once, whatever the clock says now.
var pastDeadline = time.Unix(1, 0)

type key struct{}

// release is what Transport needs to release one inbound request's body.
type release struct {
	w  http.ResponseWriter
	in io.Closer
	// h1 is set for HTTP/1 bodies, which are released only while unread.
	h1 *trackedBody
}

// Handler lets Transport release the body of every request it serves:
// wrap the ReverseProxy (or whatever calls Transport) with it.
func Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rel := &release{w: w, in: r.Body}
		r = r.WithContext(context.WithValue(r.Context(), key{}, rel))
		if r.ProtoMajor < 2 {
			rel.h1 = &trackedBody{ReadCloser: r.Body}
			r.Body = rel.h1
		}
		next.ServeHTTP(w, r)
	})
}

// Transport wraps rt: the body of each response it returns releases the
// inbound request's body (see the package doc) before it closes. Requests
// that did not pass through Handler, and upgrades (101: the body is the
// connection), are left alone.
func Transport(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		rel, _ := r.Context().Value(key{}).(*release)
		if rel == nil || resp.Body == nil || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
		if rel.h1 != nil && resp.StatusCode > 299 {
			// An HTTP/1 server cannot even write the answer's header
			// while a read of the body is in progress (it checks the
			// body's state under the lock that read holds), so an
			// HTTP/1 body is given up now, as Go's HTTP/2 client gives
			// up its own on such a status.
			rel.do()
		}
		resp.Body = &releasingBody{ReadCloser: resp.Body, rel: rel}
		return resp, nil
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// releasingBody is an upstream response body whose Close first releases
// the inbound request body.
type releasingBody struct {
	io.ReadCloser
	rel *release
}

func (b *releasingBody) Close() error {
	b.rel.do()
	return b.ReadCloser.Close()
}

func (rel *release) do() {
	if rel.h1 == nil {
		_ = rel.in.Close() // HTTP/2: only breaks the body's pipe
		return
	}
	if rel.h1.done.Load() {
		return // read to its end: the transport is not waiting on it
	}
	// Not supported (a ResponseWriter that hides its connection) leaves
	// the wait as it was; nothing better is possible from here.
	_ = http.NewResponseController(rel.w).SetReadDeadline(pastDeadline)
}

// trackedBody notes when an HTTP/1 body has been read to its end: from
// then on the server may be reading the connection in the background, and
// a past deadline would cancel the request.
type trackedBody struct {
	io.ReadCloser
	done atomic.Bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.done.Store(true)
	}
	return n, err
}
