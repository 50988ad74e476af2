package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/edges/protocol"
	"github.com/wharfhub/wharf/revdial"
)

// errJoinRefused marks a join the hub refused for good (a wrong, spent or
// expired token): retrying cannot help, a fresh token is needed.
var errJoinRefused = errors.New("join refused")

// prepare turns the state directory and an optional join bundle into the
// state and credential to connect with. Rules:
//   - no bundle: the saved state and credential are required;
//   - a bundle for another edge than the saved, joined state: an error;
//   - a bundle for the saved edge with a saved credential: the credential
//     is used and the token ignored (re-running the printed command is
//     harmless);
//   - otherwise the bundle's state is saved and its token exchanged.
func prepare(ctx context.Context, cfg *Config, dir stateDir) (State, *credStore, error) {
	logger := klog.FromContext(ctx)
	saved, haveState, err := dir.loadState()
	if err != nil {
		return State{}, nil, err
	}
	cred, err := dir.loadCredential()
	if err != nil {
		return State{}, nil, err
	}
	store := &credStore{dir: dir, cred: cred}
	if cfg.Join == "" {
		if !haveState || cred == "" {
			return State{}, nil, fmt.Errorf("no saved join in %s: run once with --join <bundle> or --join-file <file>", dir.path)
		}
		return saved, store, validateState(saved)
	}
	b, err := protocol.DecodeBundle(cfg.Join)
	if err != nil {
		return State{}, nil, err
	}
	st := stateFromBundle(b)
	if err := validateState(st); err != nil {
		return State{}, nil, err
	}
	// A state dir without a credential holds nothing worth keeping (a
	// join that failed), so another bundle may take it over.
	if haveState && cred != "" && !saved.sameEdge(st) {
		return State{}, nil, fmt.Errorf("state dir %s belongs to edge %q of cluster %s, not %q of %s: use another --state-dir",
			dir.path, saved.Edge, saved.Cluster, st.Edge, st.Cluster)
	}
	if haveState && cred != "" {
		logger.Info("Already joined; using the saved credential (the join token is kept in memory in case the hub refuses it)", "edge", st.Edge, "cluster", st.Cluster)
		store.spare = b.Token
		return saved, store, nil
	}
	if err := dir.saveState(st); err != nil {
		return State{}, nil, err
	}
	tlsCfg, err := pinnedTLS(st.CA)
	if err != nil {
		return State{}, nil, err
	}
	newCred, err := newJoiner(st, tlsCfg).exchange(ctx, cfg.Backoff, b.Token)
	if err != nil {
		return State{}, nil, err
	}
	if err := store.set(newCred); err != nil {
		return State{}, nil, err
	}
	logger.Info("Joined; credential saved", "edge", st.Edge, "cluster", st.Cluster, "stateDir", dir.path)
	return st, store, nil
}

func validateState(s State) error {
	u, err := url.Parse(s.HubURL)
	if err != nil {
		return fmt.Errorf("hub URL: %w", err)
	}
	if u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("hub URL %q: must be https://host[:port]", s.HubURL)
	}
	switch s.Type {
	case "kubernetes", "server":
	default:
		return fmt.Errorf("edge type %q: must be kubernetes or server", s.Type)
	}
	if s.Cluster == "" || s.Edge == "" || strings.ContainsAny(s.Cluster+s.Edge, "/?#") {
		return fmt.Errorf("edge %q of cluster %q: bad name", s.Edge, s.Cluster)
	}
	return nil
}

// joiner exchanges join tokens at one edge's join endpoint.
type joiner struct {
	endpoint string
	client   *http.Client
}

func newJoiner(st State, tlsCfg *tlsConfig) *joiner {
	return &joiner{
		endpoint: strings.TrimSuffix(st.HubURL, "/") + protocol.BackendPrefix + protocol.AgentBase(st.Cluster, st.Edge) + "/join",
		client:   &http.Client{Transport: tlsCfg.transport(), Timeout: 30 * time.Second},
	}
}

// exchange trades the join token for the agent credential. Network errors
// and 5xx answers are retried with backoff (the hub may be restarting);
// 4xx answers are final. The token never appears in an error or log.
func (j *joiner) exchange(ctx context.Context, backoff revdial.Backoff, token string) (string, error) {
	logger := klog.FromContext(ctx)
	for attempt := 0; ; attempt++ {
		cred, err := j.once(ctx, token)
		if err == nil || errors.Is(err, errJoinRefused) || ctx.Err() != nil {
			return cred, err
		}
		d := backoff.Delay(attempt)
		logger.Info("Join attempt failed; retrying", "err", err, "after", d.Round(time.Millisecond))
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", fmt.Errorf("join: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// once is one exchange attempt.
func (j *joiner) once(ctx context.Context, token string) (string, error) {
	body, err := json.Marshal(protocol.JoinRequest{Token: token})
	if err != nil {
		return "", fmt.Errorf("join: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.endpoint, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("join: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := j.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("join: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("join: reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		msg := statusMessage(raw)
		if resp.StatusCode >= 400 && resp.StatusCode < 500 {
			return "", fmt.Errorf("%w by the hub (HTTP %d: %s): the join token is wrong, used or expired; mint a new one with `wharf edge join-command`",
				errJoinRefused, resp.StatusCode, msg)
		}
		return "", fmt.Errorf("join: HTTP %d: %s", resp.StatusCode, msg)
	}
	var jr protocol.JoinResponse
	if err := json.Unmarshal(raw, &jr); err != nil {
		return "", fmt.Errorf("join: decoding the answer: %w", err)
	}
	if jr.Credential == "" || strings.ContainsAny(jr.Credential, " \r\n\t") {
		return "", fmt.Errorf("%w: the hub answered without a usable credential", errJoinRefused)
	}
	return jr.Credential, nil
}

// statusMessage extracts a Kubernetes Status message, or a short excerpt
// of a non-Status body.
func statusMessage(raw []byte) string {
	var s metav1.Status
	if err := json.Unmarshal(raw, &s); err == nil && s.Message != "" {
		return s.Message
	}
	t := strings.TrimSpace(string(raw))
	if len(t) > 200 {
		t = t[:200] + "…"
	}
	return t
}
