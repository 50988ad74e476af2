package edges

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gorilla/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"golang.org/x/crypto/ssh"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
)

// maxJoinBody bounds the join request; a token is 43 bytes.
const maxJoinBody = 4 << 10

// maxAgentHeader bounds what an agent may put in its status fields.
const maxAgentHeader = 1024

// serveJoin is POST {AgentBase}/join: the agent exchanges its join token for
// a credential. Public path: the token is the only authentication.
func (p *Provider) serveJoin(w http.ResponseWriter, r *http.Request, cluster, name string) {
	var req protocol.JoinRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxJoinBody)).Decode(&req); err != nil || req.Token == "" {
		writeStatus(w, r, apierrors.NewBadRequest("the body must be a JoinRequest with a token"))
		return
	}
	cred, err := p.exchangeJoinToken(r.Context(), cluster, name, req.Token)
	if err != nil {
		logAgentError(r, err)
		writeStatus(w, r, agentError(err))
		return
	}
	writeJSON(w, http.StatusOK, protocol.JoinResponse{Credential: cred})
}

// serveAgentProxy is GET {AgentBase}/proxy: the agent's control websocket.
// The credential is checked (and maybe rotated) before the upgrade; a
// rotated credential rides in the 101 answer.
func (p *Provider) serveAgentProxy(w http.ResponseWriter, r *http.Request, cluster, name string) {
	log := klog.FromContext(r.Context()).WithValues("cluster", cluster, "edge", name)
	cred, ok := bearer(r)
	if !ok {
		writeStatus(w, r, errUnauthorized)
		return
	}
	if !websocket.IsWebSocketUpgrade(r) {
		writeStatus(w, r, apierrors.NewBadRequest("the agent tunnel is a websocket upgrade"))
		return
	}
	e, rotated, err := p.authenticateAgent(r.Context(), cluster, name, cred)
	if err != nil {
		logAgentError(r, err)
		writeStatus(w, r, agentError(err))
		return
	}
	info, err := agentInfoFrom(r, e.Spec.Type)
	if err != nil {
		writeStatus(w, r, err)
		return
	}
	hdr := http.Header{}
	if rotated != "" {
		hdr.Set(protocol.HeaderRotatedCredential, rotated)
	}
	// The upgrader writes the 101 itself on the hijacked connection, so
	// the rotated credential goes in its response header, not w.Header().
	u := websocket.Upgrader{
		HandshakeTimeout: p.rdOpts.HandshakeTimeout,
		ReadBufferSize:   1024,
		WriteBufferSize:  1024,
		// The credential authorizes, not ambient cookies: no CSWSH risk.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	ws, err := u.Upgrade(w, r, hdr)
	if err != nil {
		log.V(2).Info("agent tunnel upgrade failed", "err", err)
		return // Upgrade has answered
	}
	d, err := p.rd.NewDialer(tunnelID(cluster, name), ws)
	if err != nil {
		ws.Close()
		log.Error(err, "adopting an agent tunnel")
		return
	}
	log.Info("agent connected", "agentVersion", info.version, "hostname", info.hostname)
	p.adopt(p.ctx, cluster, name, d, info, hashSecret(cred))
}

// logAgentError logs an unexpected failure on an agent path (refusals are
// routine and logged at V(2) only; nothing secret is in either).
func logAgentError(r *http.Request, err error) {
	log := klog.FromContext(r.Context())
	if apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		log.V(2).Info("refused an agent", "path", r.URL.Path)
		return
	}
	log.Error(err, "agent request failed", "path", r.URL.Path)
}

// agentInfoFrom reads and checks what the agent says about itself.
func agentInfoFrom(r *http.Request, typ v1alpha1.EdgeType) (agentInfo, error) {
	info := agentInfo{
		edgeType: typ,
		version:  r.Header.Get(protocol.HeaderAgentVersion),
		hostname: r.Header.Get(protocol.HeaderAgentHostname),
	}
	// An agent that serves another type than the Edge's is refused: a
	// kubernetes agent (an HTTP proxy that impersonates whoever the
	// X-Wharf-Edge-* headers name) behind a server Edge would receive the
	// ssh egress's raw bytes, so any caller could write those headers
	// themselves and pick their identity on the edge cluster. The bundle's
	// type is whatever the workspace admin wrote into it, so only this
	// check ties the two together. An agent that names no type is refused
	// too: every wharf-agent sends it.
	if at := r.Header.Get(protocol.HeaderAgentType); at != string(typ) {
		return info, apierrors.NewBadRequest(fmt.Sprintf("this agent serves a %q edge but the Edge is of type %q: join it with a bundle of the Edge's type", at, typ))
	}
	for _, v := range []string{info.version, info.hostname} {
		if len(v) > maxAgentHeader || !utf8.ValidString(v) {
			return info, apierrors.NewBadRequest("agent version and hostname must be short UTF-8 strings")
		}
	}
	if key := strings.TrimSpace(r.Header.Get(protocol.HeaderAgentSSHHostKey)); key != "" && typ == v1alpha1.TypeServer {
		// The CLI pins this key, so only a well-formed one is recorded.
		pk, _, _, rest, err := ssh.ParseAuthorizedKey([]byte(key))
		if err != nil || len(strings.TrimSpace(string(rest))) > 0 {
			return info, apierrors.NewBadRequest("the ssh host key header is not one authorized_keys line")
		}
		info.sshHostKey = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pk)))
	}
	return info, nil
}

// bearer returns the request's bearer token.
func bearer(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}
