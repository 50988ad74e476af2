package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/edges/protocol"
	"github.com/wharfhub/wharf/revdial"
)

// tunnel holds what the control handshakes need across reconnects.
type tunnel struct {
	cfg   *Config
	st    State
	creds *credStore

	mu sync.Mutex
	// refused is the status of the hub's last refusal of the credential
	// (0 when the last attempt was not refused), so the refusal is
	// logged once per change rather than every 30 s.
	refused int
	// lastErr is the last connect error logged, for the same reason.
	lastErr string
	// spareToken is a join token from --join that was not needed because
	// a credential was already saved. If the hub refuses that credential
	// (the Edge was deleted and created again under the same name), the
	// token is exchanged once before the next attempt. It lives in memory
	// only.
	spareToken string
	join       *joiner
	// scanErr is the last host-key scan failure logged.
	scanErr string
}

// controlHeader is sent on each control handshake: the credential, the
// agent's version and hostname, and for servers a fresh scan of the sshd
// host key (it may have changed since the last connect).
func (t *tunnel) controlHeader(ctx context.Context) (http.Header, error) {
	t.useSpareToken(ctx)
	h := http.Header{}
	h.Set("Authorization", "Bearer "+t.creds.get())
	h.Set(protocol.HeaderAgentVersion, t.cfg.Version)
	h.Set(protocol.HeaderAgentHostname, t.cfg.Hostname)
	h.Set(protocol.HeaderAgentType, t.st.Type)
	if t.st.Type == "server" {
		key, err := scanHostKey(ctx, t.cfg.SSHAddr)
		t.mu.Lock()
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		changed := msg != t.scanErr
		t.scanErr = msg
		t.mu.Unlock()
		if err != nil {
			// Connect anyway: the edge shows as connected and the CLI
			// refuses to ssh without a key to check against.
			if changed {
				klog.FromContext(ctx).Info("Cannot read the sshd host key; connecting without it", "err", msg)
			}
			return h, nil
		}
		h.Set(protocol.HeaderAgentSSHHostKey, key)
	}
	return h, nil
}

// useSpareToken exchanges the spare join token after a refusal. A token
// the hub refuses is dropped; a network failure keeps it for next time.
func (t *tunnel) useSpareToken(ctx context.Context) {
	t.mu.Lock()
	tok, refused := t.spareToken, t.refused
	t.mu.Unlock()
	if tok == "" || refused == 0 || t.join == nil {
		return
	}
	logger := klog.FromContext(ctx)
	cred, err := t.join.once(ctx, tok)
	if err != nil && !errors.Is(err, errJoinRefused) {
		logger.Info("Join with the spare token failed; will retry", "err", err)
		return
	}
	t.mu.Lock()
	t.spareToken = ""
	t.mu.Unlock()
	if err != nil {
		logger.Info("The hub refused the join token too", "err", err)
		return
	}
	if err := t.creds.set(cred); err != nil {
		logger.Error(err, "Saving the new credential failed")
		return
	}
	logger.Info("Joined again with the --join token; credential saved", "edge", t.st.Edge, "cluster", t.st.Cluster)
}

// onConnect saves a credential the hub rotated in its 101 answer before the
// tunnel carries anything; if it cannot be saved the tunnel is dropped,
// since the next start would otherwise present a credential the hub no
// longer accepts.
func (t *tunnel) onConnect(resp *http.Response) error {
	if resp == nil {
		return nil
	}
	rotated := resp.Header.Get(protocol.HeaderRotatedCredential)
	if rotated == "" {
		return nil
	}
	if err := t.creds.set(rotated); err != nil {
		return fmt.Errorf("saving the rotated credential: %w", err)
	}
	return nil
}

// refusedStatus is the HTTP status of a credential refusal, or 0.
func refusedStatus(err error) int {
	var he *revdial.HandshakeError
	if errors.As(err, &he) && (he.StatusCode == http.StatusUnauthorized || he.StatusCode == http.StatusForbidden) {
		return he.StatusCode
	}
	return 0
}

// retryDelay waits the longest backoff after a refused credential: the
// Edge was deleted (or the credential revoked), and only an operator can
// change that, so the agent polls slowly instead of hammering the hub.
func (t *tunnel) retryDelay(err error, _ int) (time.Duration, bool) {
	if refusedStatus(err) == 0 {
		return 0, false
	}
	max := t.cfg.Backoff.Max
	if max <= 0 {
		max = 30 * time.Second
	}
	return max, true
}

func (t *tunnel) onState(logger klog.Logger, up bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	kv := []any{"edge", t.st.Edge, "cluster", t.st.Cluster}
	if up {
		if t.refused != 0 {
			logger.Info("The hub accepts the agent credential again", kv...)
		}
		t.refused, t.lastErr = 0, ""
		logger.Info("Tunnel connected", kv...)
		return
	}
	if code := refusedStatus(err); code != 0 {
		if t.refused != code {
			logger.Info("The hub refused the agent credential: the Edge was deleted or its credential revoked; retrying at the longest backoff. Join again with a new bundle (and a fresh --state-dir) if the edge was recreated.",
				append(kv, "status", code)...)
		}
		t.refused = code
		return
	}
	t.refused = 0
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != t.lastErr {
		logger.Info("Tunnel down; reconnecting with backoff", append(kv, "err", msg)...)
		t.lastErr = msg
	}
}
