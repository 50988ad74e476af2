package proxybody_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/sdk/proxybody"
)

// upstream is an HTTP/2 server, as kube-apiserver is to client-go: /early
// refuses without reading the body, its answer without Content-Length (as
// any answer that is flushed or too large to buffer); /echo reads the body
// and returns it.
func upstream(t *testing.T) *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/echo" {
			w.WriteHeader(http.StatusCreated)
			_, _ = io.Copy(w, r.Body)
			return
		}
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"kind":"Status","reason":"Forbidden"}`)
		w.(http.Flusher).Flush()
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// front serves a ReverseProxy to up over HTTP/2, as a hub or filter faces
// kubectl.
func front(t *testing.T, up *httptest.Server, h2 bool) *httptest.Server {
	target, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	tr := up.Client().Transport.(*http.Transport).Clone()
	tr.ForceAttemptHTTP2 = true
	rp := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport:     proxybody.Transport(tr),
		FlushInterval: -1,
	}
	srv := httptest.NewUnstartedServer(proxybody.Handler(rp))
	srv.EnableHTTP2 = h2
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// TestEarlyAnswerWithBodyUnsent: the client withholds the end of its body
// until it has read the whole answer, as Go's HTTP/2 client does once a
// status above 299 arrives. Without the package the proxy never ends the
// answer: closing the upstream response waits for its transport to read
// the rest of the body, on every run. The bound only turns that into a
// failure.
func TestEarlyAnswerWithBodyUnsent(t *testing.T) {
	up := upstream(t)
	for _, tc := range []struct {
		name string
		h2   bool
	}{
		{"client over HTTP/2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := front(t, up, tc.h2)
			client := srv.Client()
			for i := range 2 { // the second request after a released one
				code, body := send(t, client, srv.URL+"/early", tc.h2, false)
				if code != http.StatusForbidden || !strings.Contains(body, `"reason":"Forbidden"`) {
					t.Fatalf("request %d: answer %d %s, want the upstream's 403", i, code, body)
				}
			}
			// A body read to its end is left alone.
			for i := range 2 {
				code, body := send(t, client, srv.URL+"/echo", tc.h2, true)
				if code != http.StatusCreated || body != `{"metadata":{}}` {
					t.Fatalf("echo %d: answer %d %q, want 201 with the body", i, code, body)
				}
			}
		})
	}
}

// send posts a body in two parts: the second after the answer, or at once
// when whole.
func send(t *testing.T, client *http.Client, u string, h2, whole bool) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pr, pw := io.Pipe()
	defer pw.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, pr)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = io.WriteString(pw, `{"metadata":`)
		if whole {
			_, _ = io.WriteString(pw, `{}}`)
			_ = pw.Close()
		}
	}()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	defer resp.Body.Close()
	if got := resp.ProtoMajor == 2; got != h2 {
		t.Fatalf("answered over %s", resp.Proto)
	}
	body, err := io.ReadAll(resp.Body)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the proxy never ended its %d answer while the client held back the rest of its body", resp.StatusCode)
	}
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	return resp.StatusCode, string(body)
}
