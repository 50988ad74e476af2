package apiview

import (
	"bytes"
	"crypto/sha512"
	"fmt"
	"net/http"
	"strconv"
)

// captured is a response the hub's own handlers wrote, held so that it can
// be filtered before the client sees it.
type captured struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func newCaptured() *captured { return &captured{header: http.Header{}} }

func (c *captured) Header() http.Header { return c.header }

func (c *captured) WriteHeader(code int) {
	if c.code == 0 {
		c.code = code
	}
}

func (c *captured) Write(b []byte) (int, error) {
	if c.code == 0 {
		c.code = http.StatusOK
	}
	return c.body.Write(b)
}

// internalGet asks h for path as the hub itself, without the caller's
// conditional or compression headers, so the answer is always the whole
// document in plain bytes.
func internalGet(h http.Handler, r *http.Request, path string) *captured {
	r2 := r.Clone(r.Context())
	r2.Method = http.MethodGet
	if path != "" {
		u := *r.URL
		u.Path, u.RawPath, u.RawQuery = path, "", ""
		r2.URL = &u
		r2.RequestURI = u.RequestURI()
	}
	for _, k := range []string{"If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range", "Range", "Accept-Encoding"} {
		r2.Header.Del(k)
	}
	c := newCaptured()
	h.ServeHTTP(c, r2)
	if c.code == 0 {
		c.code = http.StatusOK
	}
	return c
}

// etagOf is the entity tag upstream's discovery and OpenAPI handlers use:
// the upper-case hex SHA-512 of the body.
func etagOf(b []byte) string { return fmt.Sprintf("%X", sha512.Sum512(b)) }

// writeWithETag writes body with the headers of c and a fresh ETag, or
// 304 when the caller already holds it.
func writeWithETag(w http.ResponseWriter, r *http.Request, c *captured, body []byte) {
	for k, vs := range c.header {
		if k == "Content-Length" || k == "Etag" || k == "Content-Encoding" {
			continue
		}
		w.Header()[k] = vs
	}
	if c.header.Get("Etag") != "" {
		tag := strconv.Quote(etagOf(body))
		w.Header().Set("Etag", tag)
		if r.Header.Get("If-None-Match") == tag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(c.code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}
