package resourceproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/sdk/clusters"
)

// ClientNamespaces tells whether a namespace exists in a client workspace.
type ClientNamespaces interface {
	Exists(ctx context.Context, cluster, namespace string) (bool, error)
}

// hubNamespaces asks the hub with the provider's own identity, which the
// client workspace's admin grants get on namespaces (providerauth has no
// opinion on core resources).
type hubNamespaces struct {
	// clients is one clientset per client cluster.
	clients *clusters.Clients[*kubernetes.Clientset]
}

// NewHubNamespaces checks namespaces on the hub as the provider.
func NewHubNamespaces(cfg *rest.Config) ClientNamespaces { return newHubNamespaces(cfg) }

func newHubNamespaces(cfg *rest.Config) *hubNamespaces {
	return &hubNamespaces{clients: clusters.NewClients(cfg, kubernetes.NewForConfig)}
}

func (h *hubNamespaces) Exists(ctx context.Context, cluster, ns string) (bool, error) {
	cs, err := h.clients.For(cluster)
	if err != nil {
		return false, err
	}
	_, err = cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("namespace %q in the client workspace: %w", ns, err)
}

// syncSet is a concurrent set of strings.
type syncSet struct {
	mu sync.Mutex
	m  map[string]bool
}

func (s *syncSet) has(k string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[k]
}

func (s *syncSet) set(k string, v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]bool{}
	}
	if v {
		s.m[k] = true
	} else {
		delete(s.m, k)
	}
}

// ensureNamespace creates ns on the target as the client identity when it
// is not known to exist there. 409 means it exists; any other answer (a
// 403: the client may not create namespaces there) lets the write go on,
// and the target then answers for it.
func (t *targetConn) ensureNamespace(ctx context.Context, ns, user string) {
	key := user + "|" + ns
	if t.nsKnown.has(key) {
		return
	}
	body, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url("/api/v1/namespaces", "").String(), bytes.NewReader(body))
	if err != nil {
		return
	}
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Impersonate-User", user)
	resp, err := t.roundTrip(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusCreated, http.StatusOK:
		klog.V(2).InfoS("resource proxy: created namespace on target", "target", t.name, "namespace", ns)
		t.nsKnown.set(key, true)
	case http.StatusConflict:
		t.nsKnown.set(key, true)
	}
}
