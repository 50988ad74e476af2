package portal

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed shell/*.html shell/*.js shell/*.css shell/*.svg
var files embed.FS

// AssetPrefix is where the shell's own files are served.
const AssetPrefix = "/ui/shell/"

// CSP is the shell page's Content-Security-Policy (see doc.go).
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
	"connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-src 'none'; " +
	"object-src 'none'; worker-src 'none'; frame-ancestors 'none'"

// Options configure the portal.
type Options struct {
	// CSRF returns the CSRF token to write into the shell page for r, or
	// "" (hub/login's DocumentCSRF: only top-level navigations of a signed
	// in browser get one). Nil: never.
	CSRF func(r *http.Request) string
}

// Portal serves the shell page and its files.
type Portal struct {
	csrf   func(*http.Request) string
	page   *template.Template
	static []byte // the page without a token
	etag   string
	assets map[string]asset
}

type asset struct {
	body  []byte
	etag  string
	ctype string
}

// New loads the embedded shell. The files are embedded at build time, so
// an error is a build defect.
func New(o Options) (*Portal, error) {
	raw, err := files.ReadFile("shell/index.html")
	if err != nil {
		return nil, fmt.Errorf("portal shell: %w", err)
	}
	page, err := template.New("index.html").Parse(string(raw))
	if err != nil {
		return nil, fmt.Errorf("portal shell: %w", err)
	}
	p := &Portal{csrf: o.CSRF, page: page, assets: map[string]asset{}}
	if p.static, err = p.render(""); err != nil {
		return nil, err
	}
	p.etag = etagOf(p.static)
	entries, err := fs.ReadDir(files, "shell")
	if err != nil {
		return nil, fmt.Errorf("portal shell: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if name == "index.html" {
			continue
		}
		body, err := files.ReadFile("shell/" + name)
		if err != nil {
			return nil, fmt.Errorf("portal shell: %w", err)
		}
		ct := mime.TypeByExtension(path.Ext(name))
		if path.Ext(name) == ".js" {
			ct = "text/javascript; charset=utf-8" // independent of the host's mime tables
		}
		p.assets[name] = asset{body: body, etag: etagOf(body), ctype: ct}
	}
	return p, nil
}

// Must is New for callers that treat a broken embed as a build defect.
func Must(o Options) *Portal {
	p, err := New(o)
	if err != nil {
		panic(err)
	}
	return p
}

func (p *Portal) render(token string) ([]byte, error) {
	var b bytes.Buffer
	if err := p.page.Execute(&b, struct{ CSRF string }{token}); err != nil {
		return nil, fmt.Errorf("portal shell: %w", err)
	}
	return b.Bytes(), nil
}

func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}

// securityHeaders are set on every portal response.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// Shell returns the handler for the shell page itself.
func (p *Portal) Shell() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w.Header())
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w)
			return
		}
		h := w.Header()
		// The shell document carries the CSRF token until its first
		// module has run. A provider script is same-origin: with a
		// window.open() handle on a second shell it could read that
		// window's DOM (or patch its globals) before the shell removes
		// the token. noopener-allow-popups puts every shell document in
		// its own browsing context group, so no other page of this
		// origin keeps a handle on it (the opener gets a closed window).
		h.Set("Cross-Origin-Opener-Policy", "noopener-allow-popups")
		h.Set("Vary", "Cookie, Sec-Fetch-Mode, Sec-Fetch-Dest")
		token := ""
		if p.csrf != nil {
			token = p.csrf(r)
		}
		if token == "" {
			// The same bytes for everyone: revalidate cheaply via the ETag.
			h.Set("Cache-Control", "no-cache")
			h.Set("ETag", p.etag)
			http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(p.static))
			return
		}
		body, err := p.render(token)
		if err != nil {
			http.Error(w, "portal shell failed", http.StatusInternalServerError)
			return
		}
		// The page holds this session's CSRF token: never stored anywhere.
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	})
}

// serveAsset serves one of the shell's files under AssetPrefix.
func (p *Portal) serveAsset(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w)
		return
	}
	a, ok := p.assets[strings.TrimPrefix(r.URL.Path, AssetPrefix)]
	h := w.Header()
	if !ok {
		// Never cached for long: a missing file may appear with the next
		// hub version.
		h.Set("Cache-Control", "no-store")
		writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("the portal has no file %q", strings.TrimPrefix(r.URL.Path, AssetPrefix)))
		return
	}
	// Short and revalidated: the shell changes with every hub release.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	h.Set("Content-Type", a.ctype)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}

// WithPortal serves the portal in front of next: the shell's files under
// AssetPrefix, the shell page for /ui and every /ui/ path outside the
// provider routes (those are the UI proxy's, which falls back to Shell),
// and for a browser's navigation to "/". Other requests to "/" (kubectl,
// curl) get the API's root document as from kube-apiserver.
func (p *Portal) WithPortal(next http.Handler, providerUIPrefix string) http.Handler {
	shell := p.Shell()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pth := r.URL.Path
		if r.Header.Get("Service-Worker") != "" && (pth == "/" || pth == "/ui" || strings.HasPrefix(pth, "/ui/")) {
			// A provider's script could register a service worker from
			// its own UI files: it would outlive the session and the
			// provider's enablement and answer the portal's navigations
			// under its path (a fake sign-in form in the hub's origin).
			// The CSP (worker-src 'none') forbids it in the shell; this
			// refuses the worker's script wherever it is asked for.
			securityHeaders(w.Header())
			writeStatus(w, http.StatusForbidden, "Forbidden", "the portal serves no service worker scripts")
			return
		}
		switch {
		case strings.HasPrefix(pth, AssetPrefix):
			p.serveAsset(w, r)
		case strings.HasPrefix(pth, providerUIPrefix):
			next.ServeHTTP(w, r)
		case pth == "/ui" || strings.HasPrefix(pth, "/ui/"):
			shell.ServeHTTP(w, r)
		case pth == "/" && wantsHTML(r):
			shell.ServeHTTP(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// wantsHTML: a browser navigation (GET asking for HTML first-class).
func wantsHTML(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	if r.Header.Get("Sec-Fetch-Mode") == "navigate" {
		return true
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		if mt == "text/html" {
			return true
		}
	}
	return false
}

func methodNotAllowed(w http.ResponseWriter) {
	w.Header().Set("Allow", "GET, HEAD")
	writeStatus(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "the portal is read-only")
}

// writeStatus answers with a Kubernetes Status, as the rest of the hub.
// Built by hand: this package stays free of apimachinery.
func writeStatus(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": msg, "reason": reason, "code": code,
	})
}
