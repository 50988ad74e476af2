package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/wharfhub/wharf/providers/edges/protocol"
)

// bundleParts is the join bundle given piece by piece, the way a Helm
// chart has it: the hub URL, cluster, edge name and type as values, the
// pinned CA and the single-use join token as mounted files (the token
// comes from a Secret and is never on a command line).
type bundleParts struct {
	hubURL, caFile, cluster, edge, edgeType, tokenFile string
}

func (p *bundleParts) addFlags(f *pflag.FlagSet) {
	f.StringVar(&p.hubURL, "hub-url", "", "hub's external https URL (instead of a bundle; with --hub-ca-file, --cluster, --edge, --join-token-file)")
	f.StringVar(&p.caFile, "hub-ca-file", "", "PEM file of the hub's serving CA, pinned (instead of a bundle)")
	f.StringVar(&p.cluster, "cluster", "", "logical cluster id of the edge's workspace (instead of a bundle)")
	f.StringVar(&p.edge, "edge", "", "the Edge's name (instead of a bundle)")
	f.StringVar(&p.edgeType, "edge-type", "kubernetes", "the Edge's type, kubernetes or server (with --edge)")
	f.StringVar(&p.tokenFile, "join-token-file", "", "file holding the single-use join token (instead of a bundle)")
}

func (p *bundleParts) given() bool {
	return p.hubURL != "" || p.caFile != "" || p.cluster != "" || p.edge != "" || p.tokenFile != ""
}

// encode reads the files and returns the bundle they make, checked as
// protocol.DecodeBundle checks one given whole.
func (p *bundleParts) encode() (string, error) {
	if p.hubURL == "" || p.caFile == "" || p.cluster == "" || p.edge == "" || p.tokenFile == "" {
		return "", errors.New("--hub-url, --hub-ca-file, --cluster, --edge and --join-token-file go together")
	}
	if !strings.HasPrefix(p.hubURL, "https://") {
		return "", fmt.Errorf("--hub-url %q must be an https URL", p.hubURL)
	}
	if p.edgeType != "kubernetes" && p.edgeType != "server" {
		return "", fmt.Errorf("--edge-type %q must be kubernetes or server", p.edgeType)
	}
	ca, err := os.ReadFile(p.caFile)
	if err != nil {
		return "", fmt.Errorf("--hub-ca-file: %w", err)
	}
	tok, err := os.ReadFile(p.tokenFile)
	if err != nil {
		return "", fmt.Errorf("--join-token-file: %w", err)
	}
	b := protocol.Bundle{
		HubURL: strings.TrimRight(p.hubURL, "/"), CA: string(ca), Cluster: p.cluster,
		Edge: p.edge, Type: p.edgeType, Token: strings.TrimSpace(string(tok)),
	}
	s, err := b.Encode()
	if err != nil {
		return "", err
	}
	// The same checks as a bundle given whole (an empty token file, say).
	if _, err := protocol.DecodeBundle(s); err != nil {
		return "", err
	}
	return s, nil
}
