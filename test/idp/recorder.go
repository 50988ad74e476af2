package idp

import (
	"net/http"
	"sync"
)

// Recorder is an http.RoundTripper that keeps every response it passes:
// a browser test needs what a cookie jar and followed redirects hide,
// such as Set-Cookie attributes and the URLs of intermediate hops.
type Recorder struct {
	// RT does the requests.
	RT http.RoundTripper

	mu   sync.Mutex // guards seen
	seen []*http.Response
}

// RoundTrip implements http.RoundTripper.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.RT.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.seen = append(r.seen, resp)
		r.mu.Unlock()
	}
	return resp, err
}

// Last returns the last response to a request for path, nil if none.
func (r *Recorder) Last(path string) *http.Response {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.seen) - 1; i >= 0; i-- {
		if r.seen[i].Request.URL.Path == path {
			return r.seen[i]
		}
	}
	return nil
}

// Responses returns every response recorded so far, oldest first.
func (r *Recorder) Responses() []*http.Response {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*http.Response(nil), r.seen...)
}
