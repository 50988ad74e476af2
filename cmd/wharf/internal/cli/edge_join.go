package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	edgesv1 "github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
)

// agentStateDir is the state directory the printed join line uses.
const agentStateDir = "/var/lib/wharf-agent"

// mintToken asks the edges provider for a fresh single-use join token for
// the edge, as the caller (the provider authorizes it per request).
func mintToken(ctx context.Context, c *hubConn, cluster, name string) (protocol.JoinTokenResponse, error) {
	var out protocol.JoinTokenResponse
	rc, err := c.rootConfig()
	if err != nil {
		return out, err
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return out, fmt.Errorf("building the hub client: %w", err)
	}
	u := rc.Host + protocol.BackendPrefix + protocol.EgressBase(cluster, name) + "/join-token"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader([]byte("{}")))
	if err != nil {
		return out, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	// The backend proxy resolves the active workspace from this header;
	// the logical cluster id names the edge's workspace unambiguously.
	req.Header.Set("X-Wharf-Workspace", cluster)
	resp, err := hc.Do(req)
	if err != nil {
		return out, fmt.Errorf("requesting a join token: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return out, fmt.Errorf("reading the join token: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return out, fromServer(statusFromResponse(resp.StatusCode, body))
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Token == "" {
		return out, errors.New("the edges provider answered the join-token request without a token")
	}
	return out, nil
}

// buildBundle is the join bundle for e: the hub root, its pinned CA, the
// edge's cluster and name, and the token.
func buildBundle(c *hubConn, e *edgesv1.Edge, cluster, token string) (string, error) {
	root, err := c.hubRoot()
	if err != nil {
		return "", err
	}
	ca, err := c.caPEM()
	if err != nil {
		return "", err
	}
	b := protocol.Bundle{HubURL: root, CA: string(ca), Cluster: cluster, Edge: e.Name, Type: string(e.Spec.Type), Token: token}
	s, err := b.Encode()
	if err != nil {
		return "", fmt.Errorf("encoding the join bundle: %w", err)
	}
	if !shellSafe(s) {
		// Encode promises base64url; guard the promise the printed line relies on.
		return "", errors.New("join bundle is not shell-safe")
	}
	return s, nil
}

var shellSafeRE = regexp.MustCompile(`^[A-Za-z0-9._=-]+$`)

// shellSafe reports whether s is one word that every POSIX shell passes
// through unchanged without quoting.
func shellSafe(s string) bool { return shellSafeRE.MatchString(s) }

// printJoin mints a token and prints the ways to join e. Exactly one line
// starts with "wharf-agent run ": it is self-contained (the bundle carries
// hub URL, CA, edge and token) and runs verbatim on the edge machine.
func printJoin(ctx context.Context, w io.Writer, c *hubConn, e *edgesv1.Edge) error {
	cluster, err := edgeCluster(e)
	if err != nil {
		return err
	}
	// Check the CA before spending a token on a bundle that cannot be built.
	if _, err := c.caPEM(); err != nil {
		return err
	}
	tok, err := mintToken(ctx, c, cluster, e.Name)
	if err != nil {
		return err
	}
	bundle, err := buildBundle(c, e, cluster, tok.Token)
	if err != nil {
		return err
	}
	writeJoin(w, e, bundle, tok.ExpiresAt, time.Now())
	return nil
}

// writeJoin prints the join instructions; now makes the expiry testable.
func writeJoin(w io.Writer, e *edgesv1.Edge, bundle, expiresAt string, now time.Time) {
	expiry := expiresAt
	if t, err := time.Parse(time.RFC3339, expiresAt); err == nil {
		expiry = fmt.Sprintf("%s (in %s)", t.UTC().Format(time.RFC3339), duration.HumanDuration(t.Sub(now)))
	}
	fmt.Fprintf(w, "Join token for edge %q expires %s. It works once; \"wharf edge join-command %s\" mints a new one.\n\n", e.Name, expiry, e.Name)
	fmt.Fprintf(w, "On the edge machine, run:\n\n")
	fmt.Fprintf(w, "wharf-agent run --join %s --state-dir %s\n\n", bundle, agentStateDir)
	switch e.Spec.Type {
	case edgesv1.TypeServer:
		fmt.Fprintln(w, "# The agent forwards SSH to 127.0.0.1:22; add --ssh-addr <host:port> for another sshd.")
	default:
		fmt.Fprintln(w, "# The agent reaches the edge cluster through $KUBECONFIG or its in-cluster config;")
		fmt.Fprintln(w, "# add --kubeconfig <path> to pick the edge cluster's kubeconfig file.")
	}
	fmt.Fprintln(w, "# To keep the token out of shell history, save the bundle (the word after --join) in a")
	fmt.Fprintln(w, "# 0600 file and pass --join-file <file> instead of --join.")
	fmt.Fprintf(w, "# After the first join the agent runs from %s alone; the agent dials out and listens on nothing.\n", agentStateDir)
}

// waitReady polls the edge until its phase is Ready, printing each phase
// change on w. It stops on ctx (Ctrl-C) or after timeout.
func waitReady(ctx context.Context, w io.Writer, c *hubConn, name string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fmt.Fprintf(w, "Waiting for edge %q to connect (Ctrl-C to stop waiting)...\n", name)
	last, lastErr := edgesv1.Phase("?"), ""
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		e, err := getEdge(ctx, c, name)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return false, nil
		case apierrors.IsNotFound(err), apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
			return false, err
		default:
			// A hub restart or a lost replica is a pause, not the end:
			// say so once and keep polling.
			if msg := err.Error(); msg != lastErr {
				lastErr = msg
				fmt.Fprintf(w, "edge %q: %v (retrying)\n", name, err)
			}
			return false, nil
		}
		lastErr = ""
		if p := e.Status.Phase; p != last {
			last = p
			if p == "" {
				p = edgesv1.PhasePending
			}
			fmt.Fprintf(w, "edge %q: %s\n", name, p)
		}
		return e.Status.Phase == edgesv1.PhaseReady, nil
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("edge %q is not Ready after %s (phase %s)", name, timeout, strings.TrimPrefix(string(last), "?"))
	case ctx.Err() != nil:
		return fmt.Errorf("stopped waiting for edge %q: %w", name, context.Cause(ctx))
	default:
		return err
	}
}
