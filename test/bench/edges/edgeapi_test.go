package edgesbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
)

// createEdge creates Edge name of type t in the edges' workspace.
func (e *env) createEdge(ctx context.Context, name string, t v1alpha1.EdgeType) error {
	spec := map[string]any{"type": string(t)}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": v1alpha1.Kind,
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
	if _, err := e.dyn.Resource(v1alpha1.GVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create edge %s: %w", name, err)
	}
	return nil
}

// joinToken mints a join token for edge name as benchUser.
func (e *env) joinToken(ctx context.Context, name string) (string, error) {
	var out protocol.JoinTokenResponse
	if err := e.postJSON(ctx, e.user, protocol.EgressBase(e.cluster, name)+"/join-token", struct{}{}, &out); err != nil {
		return "", fmt.Errorf("join token for %s: %w", name, err)
	}
	if out.Token == "" {
		return "", fmt.Errorf("join token for %s: empty answer", name)
	}
	return out.Token, nil
}

// join exchanges a join token for the edge's agent credential, on the
// public agent path, as an agent would (no hub credential).
func (e *env) join(ctx context.Context, c *http.Client, name, token string) (string, error) {
	var out protocol.JoinResponse
	if err := e.postJSON(ctx, c, protocol.AgentBase(e.cluster, name)+"/join", protocol.JoinRequest{Token: token}, &out); err != nil {
		return "", fmt.Errorf("join %s: %w", name, err)
	}
	if out.Credential == "" {
		return "", fmt.Errorf("join %s: empty credential", name)
	}
	return out.Credential, nil
}

// bundle is the join bundle of edge name, as `wharf edge create` prints it.
func (e *env) bundle(ctx context.Context, name string, t v1alpha1.EdgeType) (string, error) {
	tok, err := e.joinToken(ctx, name)
	if err != nil {
		return "", err
	}
	return protocol.Bundle{HubURL: e.hub.URL(), CA: string(e.caPEM), Cluster: e.cluster, Edge: name, Type: string(t), Token: tok}.Encode()
}

func (e *env) postJSON(ctx context.Context, c *http.Client, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.backend(path), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Wharf-Workspace", wsPath)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s: %s", strings.SplitN(path, "/edges/", 2)[0]+"/edges/…", resp.Status, bytes.TrimSpace(b))
	}
	return json.Unmarshal(b, out)
}

// edgeStatus reads an Edge's status.
func (e *env) edgeStatus(ctx context.Context, name string) (v1alpha1.EdgeStatus, error) {
	var st v1alpha1.EdgeStatus
	u, err := e.dyn.Resource(v1alpha1.GVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return st, err
	}
	raw, _, _ := unstructured.NestedMap(u.Object, "status")
	b, _ := json.Marshal(raw)
	err = json.Unmarshal(b, &st)
	return st, err
}

// countReady lists the edges and counts those named prefix… whose phase
// is Ready.
func (e *env) countReady(ctx context.Context, prefix string) (int, error) {
	l, err := e.dyn.Resource(v1alpha1.GVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, it := range l.Items {
		if !strings.HasPrefix(it.GetName(), prefix) {
			continue
		}
		if p, _, _ := unstructured.NestedString(it.Object, "status", "phase"); p == string(v1alpha1.PhaseReady) {
			n++
		}
	}
	return n, nil
}

// metrics scrapes the provider's /metrics as the hub admin (it is for hub
// admins only), through the hub.
func (e *env) metrics(ctx context.Context) (Samples, error) {
	cfg := e.hub.Config("")
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.backend("/metrics"), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Wharf-Workspace", "root")
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("provider metrics: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("provider metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("provider metrics: %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return ParseSamples(string(b)), nil
}
