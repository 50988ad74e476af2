package edges

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
)

const (
	// sshPingInterval keeps intermediaries from dropping an idle session.
	sshPingInterval = 20 * time.Second
	sshWriteTimeout = 10 * time.Second
	sshBufferSize   = 32 << 10
)

// serveSSH carries a raw TCP stream to the edge's sshd over a websocket
// (binary frames both ways). The SSH session is end to end: this process
// sees ciphertext only.
func (e *Egress) serveSSH(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || !websocket.IsWebSocketUpgrade(r) {
		writeStatus(w, r, apierrors.NewBadRequest("the ssh egress is a websocket: send GET with Upgrade: websocket"))
		return
	}
	if !sameOrigin(r) {
		// A browser page elsewhere must not ride a user's hub session
		// into their servers (cross-site websocket hijacking).
		writeStatus(w, r, apierrors.NewForbidden(schemaEdges, r.PathValue("name"), errors.New("cross-origin websocket refused")))
		return
	}
	_, t, err := e.open(r, v1alpha1.TypeServer)
	if err != nil {
		logDenial(r, err)
		writeStatus(w, r, err)
		return
	}
	// Dial before the upgrade, so a dead tunnel still answers a Status.
	conn, err := e.dial(r.Context(), t, v1alpha1.TypeServer)
	if err != nil {
		klog.FromContext(r.Context()).V(2).Info("Edge ssh dial failed", "cluster", r.PathValue("cluster"), "edge", r.PathValue("name"), "err", err.Error())
		writeStatus(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("edge %q is not connected", r.PathValue("name"))))
		return
	}
	up := websocket.Upgrader{
		ReadBufferSize: sshBufferSize, WriteBufferSize: sshBufferSize,
		CheckOrigin: func(*http.Request) bool { return true }, // checked above
		// A failed handshake answers a Status too, not gorilla's text.
		Error: func(w http.ResponseWriter, r *http.Request, code int, reason error) {
			writeStatus(w, r, &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: int32(code), Reason: metav1.StatusReasonBadRequest, Message: reason.Error(),
			}})
		},
	}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		_ = conn.Close()
		return // Upgrade has answered
	}
	// The session outlives the request context's usual meaning; it ends
	// when either side closes.
	pipeWebsocket(context.WithoutCancel(r.Context()), ws, conn)
}

// sameOrigin accepts requests without Origin (every non-browser client) and
// browser requests whose Origin is the hub's own host as the hub saw it.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	// The hub's backend proxy sets X-Forwarded-Host to the host the client
	// addressed (overwriting any the client sent); r.Host is the socket's.
	for _, h := range []string{r.Header.Get("X-Forwarded-Host"), r.Host} {
		if h != "" && strings.EqualFold(u.Host, h) {
			return true
		}
	}
	return false
}

// pipeWebsocket copies binary frames to conn and conn's bytes to frames
// until either side ends, then closes both, so an EOF on one side reaches
// the other as a close.
func pipeWebsocket(ctx context.Context, ws *websocket.Conn, conn net.Conn) {
	log := klog.FromContext(ctx)
	var wmu sync.Mutex // gorilla allows one concurrent writer
	done := make(chan struct{})
	var once sync.Once
	stop := func() { once.Do(func() { close(done) }) }

	go func() { // edge → client
		defer stop()
		buf := make([]byte, sshBufferSize)
		for {
			n, err := conn.Read(buf)
			if n > 0 {
				wmu.Lock()
				_ = ws.SetWriteDeadline(time.Now().Add(sshWriteTimeout))
				werr := ws.WriteMessage(websocket.BinaryMessage, buf[:n])
				wmu.Unlock()
				if werr != nil {
					return
				}
			}
			if err != nil {
				wmu.Lock()
				_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
				wmu.Unlock()
				return
			}
		}
	}()
	go func() { // client → edge
		defer stop()
		for {
			typ, rd, err := ws.NextReader()
			if err != nil {
				return
			}
			if typ != websocket.BinaryMessage {
				continue // text frames carry nothing for sshd
			}
			if _, err := io.Copy(conn, rd); err != nil {
				return
			}
		}
	}()
	tick := time.NewTicker(sshPingInterval)
	defer tick.Stop()
	for {
		select {
		case <-done:
			_ = conn.Close()
			_ = ws.Close()
			log.V(4).Info("Edge ssh session ended")
			return
		case <-tick.C:
			wmu.Lock()
			_ = ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(sshWriteTimeout))
			wmu.Unlock()
		}
	}
}
