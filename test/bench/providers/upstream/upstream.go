// Package upstream is the one handler every target of the provider proxy
// benchmark serves: a fixed-size answer with no work behind it, so the
// benchmark measures the proxies and not the handler.
package upstream

import (
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// Body is the fixed response body.
var Body = []byte(strings.Repeat("wharf-bench ", 10) + "\n")

// Handler answers every request with Body.
func Handler() http.Handler {
	length := strconv.Itoa(len(Body))
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h["Content-Type"] = []string{"text/plain"}
		h["Content-Length"] = []string{length}
		_, _ = w.Write(Body)
	})
}

// ServeUnix serves Handler on a new unix socket at path until the process
// exits. The socket is made connectable by any local user, because nginx
// may run as another (unprivileged) user; it only ever serves Body.
func ServeUnix(path string) error {
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	if err := os.Chmod(path, 0o777); err != nil {
		return err
	}
	return http.Serve(l, Handler())
}
