package sdk

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/wharfhub/wharf/sdk/plugin"
)

// Replicas says how many hub replicas may run the provider at once.
type Replicas = plugin.Replicas

const (
	// ReplicasAny (the default) runs the provider next to every hub replica.
	ReplicasAny = plugin.ReplicasAny
	// ReplicasSingle keeps exactly one instance across all hub replicas;
	// required when the process holds state such as revdial tunnels.
	ReplicasSingle = plugin.ReplicasSingle
)

// Manifest describes a provider to the hub and carries its handlers.
type Manifest struct {
	// Name is the provider's DNS-label name; it appears in URLs
	// (/ui/providers/<name>/, /services/providers/<name>/).
	Name        string
	DisplayName string
	Version     string
	Description string
	// Icon is a URL, a data: URI, or a file path inside the UI.
	Icon     string
	Category string

	// UI holds static assets (typically an embed.FS); UIHandler serves them
	// dynamically. Set at most one. The hub serves them at
	// /ui/providers/<name>/ and sets X-Kedge-Base-Path.
	UI        fs.FS
	UIHandler http.Handler
	// Backend serves /services/providers/<name>/ with the prefix stripped,
	// behind the hub's identity contract (see IdentityFrom).
	Backend http.Handler

	// CRDs are CustomResourceDefinitions the provider owns, as YAML (one or
	// more "---"-separated documents per entry).
	CRDs [][]byte
	// CRDObjects are CRDs as Go values, e.g.
	// *apiextensionsv1.CustomResourceDefinition; anything that marshals to a
	// CRD's JSON works, which keeps apiextensions out of this package.
	CRDObjects []any

	Replicas        Replicas
	EdgeProxyAccess bool
	// PublicPaths are backend path prefixes (after /services/providers/<name>)
	// reachable without hub authentication, e.g. an agent tunnel. Identity
	// headers are still stripped there, and none are injected.
	PublicPaths []string
}

// Validate checks what the hub relies on, so a broken manifest fails in the
// author's test rather than at hub start.
func (m *Manifest) Validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Label(m.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("name %q: %s", m.Name, strings.Join(msgs, "; ")))
	}
	if m.UI != nil && m.UIHandler != nil {
		errs = append(errs, errors.New("set UI or UIHandler, not both"))
	}
	switch m.Replicas {
	case "", ReplicasAny, ReplicasSingle:
	default:
		errs = append(errs, fmt.Errorf("replicas %q: want %q or %q", m.Replicas, ReplicasAny, ReplicasSingle))
	}
	for _, p := range m.PublicPaths {
		if !strings.HasPrefix(p, "/") {
			errs = append(errs, fmt.Errorf("public path %q must start with /", p))
		}
	}
	if _, err := m.crdJSON(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// uiHandler is the UI as a handler, or nil.
func (m *Manifest) uiHandler() http.Handler {
	if m.UIHandler != nil {
		return m.UIHandler
	}
	if m.UI != nil {
		return http.FileServerFS(m.UI)
	}
	return nil
}

func (m *Manifest) descriptor() (*plugin.Descriptor, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	crds, err := m.crdJSON()
	if err != nil {
		return nil, err
	}
	r := m.Replicas
	if r == "" {
		r = ReplicasAny
	}
	return &plugin.Descriptor{
		Name:            m.Name,
		DisplayName:     m.DisplayName,
		Version:         m.Version,
		Description:     m.Description,
		Icon:            m.Icon,
		Category:        m.Category,
		Replicas:        r,
		EdgeProxyAccess: m.EdgeProxyAccess,
		PublicPaths:     m.PublicPaths,
		CRDs:            crds,
		HasUI:           m.uiHandler() != nil,
		HasBackend:      m.Backend != nil,
	}, nil
}

// crdJSON normalises every CRD to one JSON document and checks it is one.
func (m *Manifest) crdJSON() ([][]byte, error) {
	var out [][]byte
	for i, y := range m.CRDs {
		r := utilyaml.NewYAMLReader(bufioReader(y))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("crd %d: %w", i, err)
			}
			if len(bytes.TrimSpace(doc)) == 0 || isOnlyComments(doc) {
				continue
			}
			j, err := yaml.YAMLToJSON(doc)
			if err != nil {
				return nil, fmt.Errorf("crd %d: %w", i, err)
			}
			out = append(out, j)
		}
	}
	for i, o := range m.CRDObjects {
		j, err := yaml.Marshal(o) // via JSON tags, as the apiserver would
		if err != nil {
			return nil, fmt.Errorf("crd object %d: %w", i, err)
		}
		if j, err = yaml.YAMLToJSON(j); err != nil {
			return nil, fmt.Errorf("crd object %d: %w", i, err)
		}
		out = append(out, j)
	}
	for i, j := range out {
		var probe struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(j, &probe); err != nil {
			return nil, fmt.Errorf("crd %d: %w", i, err)
		}
		if probe.Kind != "CustomResourceDefinition" || !strings.HasPrefix(probe.APIVersion, "apiextensions.k8s.io/") || probe.Metadata.Name == "" {
			return nil, fmt.Errorf("crd %d: not a named apiextensions.k8s.io CustomResourceDefinition (kind %q, apiVersion %q)", i, probe.Kind, probe.APIVersion)
		}
	}
	return out, nil
}
