// Package protocol is the contract between the edges provider, wharf-agent
// and the wharf CLI: URL paths, headers and the join bundle. It imports
// nothing from the hub so that the agent and the CLI can use it.
//
// # Paths
//
// All paths are relative to the provider's backend prefix on the hub,
// /services/providers/edges (BackendPrefix). {cluster} is the edge's
// logical cluster id, {name} the Edge's name.
//
//	POST {AgentBase}/join                      public; body JoinRequest → JoinResponse
//	GET  {AgentBase}/proxy                     public; websocket, Authorization: Bearer <agent credential>
//	GET  /agent/pickup/<token>                 public; revdial pickups (token authorizes)
//	POST {EgressBase}/join-token               hub-authenticated; mints a join token → JoinTokenResponse
//	ANY  {EgressBase}/k8s/<api path>           hub-authenticated; kubernetes egress
//	GET  {EgressBase}/ssh                      hub-authenticated; websocket carrying the raw sshd stream
//
// where AgentBase = /agent/{cluster}/apis/edges.wharf.dev/v1alpha1/edges/{name}
// and EgressBase = /edgeproxy/clusters/{cluster}/apis/edges.wharf.dev/v1alpha1/edges/{name}.
//
// # Inside the tunnel
//
// kubernetes edges: every tunnel connection carries HTTP/1.1 from the
// provider to the agent. The provider removes Authorization, Cookie, every
// Impersonate-* and X-Kedge-* header, and sets HeaderEdgeUser and one
// HeaderEdgeGroup per group (system: groups already dropped). The agent
// removes any Impersonate-* it receives and, in impersonate mode, sets
// Impersonate-User/Impersonate-Group from those headers on its own
// credential to the edge API server; in agent mode it drops them.
//
// server edges: every tunnel connection is a raw TCP stream to sshd.
package protocol

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

const (
	// ProviderName is the provider's name in the catalog and in URLs.
	ProviderName = "edges"
	// BackendPrefix is where the hub serves the provider's backend.
	BackendPrefix = "/services/providers/" + ProviderName

	// PublicPrefix is the provider's one public path prefix (agent ingress
	// and pickups); everything else needs a hub-authenticated caller.
	PublicPrefix = "/agent/"
	// PickupPrefix is the revdial pickup path, relative to BackendPrefix.
	PickupPrefix = "/agent/pickup/"
)

// Headers.
const (
	// Sent by the agent on the control websocket.
	HeaderAgentVersion  = "X-Wharf-Agent-Version"
	HeaderAgentHostname = "X-Wharf-Agent-Hostname"
	// HeaderAgentSSHHostKey is the edge sshd's host key in authorized_keys
	// form (server edges).
	HeaderAgentSSHHostKey = "X-Wharf-Agent-Ssh-Host-Key"
	// HeaderAgentType is the edge type the agent serves (its bundle's):
	// "kubernetes" (an impersonating HTTP proxy) or "server" (a raw pipe
	// to sshd). The provider refuses a tunnel whose type differs from the
	// Edge's: a kubernetes agent behind a server Edge would take the ssh
	// egress's raw bytes as HTTP, identity headers included.
	HeaderAgentType = "X-Wharf-Agent-Type"
	// HeaderRotatedCredential, on the provider's 101 answer to the control
	// websocket, carries a new agent credential that replaces the one used;
	// the agent saves it (0600) before using the tunnel.
	HeaderRotatedCredential = "X-Wharf-Agent-Credential"

	// Set by the provider inside kubernetes-edge tunnels.
	HeaderEdgeUser  = "X-Wharf-Edge-User"
	HeaderEdgeGroup = "X-Wharf-Edge-Group"
)

// AgentBase is the agent ingress base path for an edge.
func AgentBase(cluster, name string) string {
	return "/agent/" + cluster + "/apis/edges.wharf.dev/v1alpha1/edges/" + name
}

// EgressBase is the consumer egress base path for an edge.
func EgressBase(cluster, name string) string {
	return "/edgeproxy/clusters/" + cluster + "/apis/edges.wharf.dev/v1alpha1/edges/" + name
}

// JoinRequest is the agent's one-time exchange of a join token.
type JoinRequest struct {
	Token string `json:"token"`
}

// JoinResponse carries the durable agent credential, scoped to one edge.
type JoinResponse struct {
	Credential string `json:"credential"`
}

// JoinTokenResponse answers POST {EgressBase}/join-token.
type JoinTokenResponse struct {
	Token     string `json:"token"`
	ExpiresAt string `json:"expiresAt"` // RFC 3339
}

// Bundle is everything an agent needs for its first join. Its encoded form
// (Encode) is one shell-safe word, so a printed `wharf-agent run --join
// <bundle>` line works verbatim.
type Bundle struct {
	HubURL  string `json:"hub"`     // the hub's external URL, https
	CA      string `json:"ca"`      // PEM of the hub's serving CA (pinned)
	Cluster string `json:"cluster"` // logical cluster id of the edge's workspace
	Edge    string `json:"edge"`
	Type    string `json:"type"`
	Token   string `json:"token"` // single-use join token
}

const bundlePrefix = "wharf-join-v1."

// Encode returns the bundle as "wharf-join-v1.<base64url JSON>".
func (b Bundle) Encode() (string, error) {
	raw, err := json.Marshal(b)
	if err != nil {
		return "", err
	}
	return bundlePrefix + base64.RawURLEncoding.EncodeToString(raw), nil
}

// DecodeBundle parses Encode's output.
func DecodeBundle(s string) (Bundle, error) {
	var b Bundle
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), bundlePrefix)
	if !ok {
		return b, errors.New("join bundle: not a wharf-join-v1 bundle")
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return b, fmt.Errorf("join bundle: %w", err)
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return b, fmt.Errorf("join bundle: %w", err)
	}
	if b.HubURL == "" || b.Cluster == "" || b.Edge == "" || b.Token == "" || b.CA == "" {
		return b, errors.New("join bundle: hub, ca, cluster, edge and token are required")
	}
	return b, nil
}
