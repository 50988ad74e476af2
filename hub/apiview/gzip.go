package apiview

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// gzipOnce answers a document handler's GETs gzipped when the caller
// accepts it, compressing each form (JSON, protobuf) of each version
// (entity tag) of the document once, not per request. kube-openapi's
// OpenAPI v2 handler gzips per request: 40 GETs of /openapi/v2 at once,
// inside one tenant's share, spent most of both cores of a 2-core hub in
// compress/flate (issue 24, second outside review, B-C), and the hub's
// lease renewals missed their deadline. The document a view serves
// changes only when its CRDs do, and then the view is built anew, so
// what is kept here is bounded by the forms of one document.
type gzipOnce struct {
	h http.Handler

	mu    sync.Mutex
	forms map[string]*gzipped // by Content-Type
}

type gzipped struct {
	etag, lastModified string
	body               []byte
}

func newGzipOnce(h http.Handler) *gzipOnce {
	return &gzipOnce{h: h, forms: map[string]*gzipped{}}
}

func (g *gzipOnce) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || !acceptsGzip(r) {
		g.h.ServeHTTP(w, r)
		return
	}
	// HEAD: the form the caller negotiated and its entity tag, without
	// the body.
	head := r.Clone(r.Context())
	head.Method = http.MethodHead
	for _, k := range []string{"If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range", "Range", "Accept-Encoding"} {
		head.Header.Del(k)
	}
	meta := newCaptured()
	g.h.ServeHTTP(meta, head)
	ctype, etag := meta.header.Get("Content-Type"), meta.header.Get("Etag")
	if (meta.code != 0 && meta.code != http.StatusOK) || ctype == "" || etag == "" {
		g.h.ServeHTTP(w, r)
		return
	}
	z := g.form(ctype, etag)
	if z == nil {
		c := internalGet(g.h, r, "")
		if c.code != http.StatusOK || c.header.Get("Etag") != etag {
			// Changed in between, or failed: answered as it is.
			g.h.ServeHTTP(w, r)
			return
		}
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(c.body.Bytes())
		if err := zw.Close(); err != nil {
			g.h.ServeHTTP(w, r)
			return
		}
		z = &gzipped{etag: etag, lastModified: c.header.Get("Last-Modified"), body: buf.Bytes()}
		g.mu.Lock()
		g.forms[ctype] = z
		g.mu.Unlock()
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Etag", etag)
	h.Add("Vary", "Accept")
	h.Add("Vary", "Accept-Encoding")
	if z.lastModified != "" {
		h.Set("Last-Modified", z.lastModified)
	}
	if noneMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Encoding", "gzip")
	h.Set("Content-Length", strconv.Itoa(len(z.body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(z.body)
}

// form returns the compressed form of ctype at etag, if kept.
func (g *gzipOnce) form(ctype, etag string) *gzipped {
	g.mu.Lock()
	defer g.mu.Unlock()
	if z := g.forms[ctype]; z != nil && z.etag == etag {
		return z
	}
	return nil
}

// acceptsGzip reports whether the caller takes a gzipped answer, as
// gziphandler decides it (any gzip coding not refused with q=0).
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, coding := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(coding), ";")
			if strings.EqualFold(strings.TrimSpace(name), "gzip") {
				q := strings.ReplaceAll(params, " ", "")
				return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
			}
		}
	}
	return false
}

// noneMatch reports whether an If-None-Match header matches etag, as
// net/http's ServeContent (which kube-openapi's handler answers with)
// decides it: "*", or any listed tag, weakly compared.
func noneMatch(header, etag string) bool {
	for _, tag := range strings.Split(header, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == strings.TrimPrefix(etag, "W/") {
			return true
		}
	}
	return false
}
