// Package portal serves the browser portal's shell: the page every
// non-asset route under /ui/providers/<name>/ falls through to, so that a
// hard refresh on a provider's client-side route keeps the portal chrome
// (see hub/proxy's UI proxy).
//
// The shell is static HTML with no build step. It is a placeholder until
// the portal itself is built: it shows which provider the route belongs
// to and where its assets live, and never embeds caller data, so it can be
// served to anyone.
package portal

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"net/http"
	"time"
)

//go:embed shell/index.html
var files embed.FS

// Shell returns the handler for the portal shell page.
func Shell() http.Handler {
	page, err := files.ReadFile("shell/index.html")
	if err != nil {
		// The file is embedded at build time; a miss is a build defect.
		panic(err)
	}
	sum := sha256.Sum256(page)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		// The shell changes with every hub release, and routes are
		// bookmarkable: revalidate every time, cheaply via the ETag.
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", etag)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'")
		http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(page))
	})
}
