package sdk_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/wharfhub/wharf/sdk"
)

const crdYAML = `# leading comment
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.dev}
`

type static sdk.Manifest

func (s static) Manifest() sdk.Manifest { return sdk.Manifest(s) }

func TestManifestValidate(t *testing.T) {
	ok := sdk.Manifest{Name: "edges"}
	tests := []struct {
		name    string
		mod     func(*sdk.Manifest)
		wantErr string
	}{
		{name: "minimal", mod: func(*sdk.Manifest) {}},
		{name: "bad name", mod: func(m *sdk.Manifest) { m.Name = "Edges_1" }, wantErr: "name"},
		{name: "empty name", mod: func(m *sdk.Manifest) { m.Name = "" }, wantErr: "name"},
		{name: "both UIs", mod: func(m *sdk.Manifest) { m.UI = fstest.MapFS{}; m.UIHandler = http.NotFoundHandler() }, wantErr: "not both"},
		{name: "bad replicas", mod: func(m *sdk.Manifest) { m.Replicas = "Two" }, wantErr: "replicas"},
		{name: "relative public path", mod: func(m *sdk.Manifest) { m.PublicPaths = []string{"agent/"} }, wantErr: "public path"},
		{name: "multi-doc CRDs", mod: func(m *sdk.Manifest) { m.CRDs = [][]byte{[]byte(crdYAML + "---\n" + crdYAML + "---\n")} }},
		{name: "not a CRD", mod: func(m *sdk.Manifest) { m.CRDs = [][]byte{[]byte("apiVersion: v1\nkind: ConfigMap\n")} }, wantErr: "CustomResourceDefinition"},
		{name: "broken YAML", mod: func(m *sdk.Manifest) { m.CRDs = [][]byte{[]byte("kind: [")} }, wantErr: "crd 0"},
		{name: "CRD object", mod: func(m *sdk.Manifest) {
			m.CRDObjects = []any{map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
				"metadata": map[string]any{"name": "gadgets.example.dev"}}}
		}},
		{name: "unnamed CRD object", mod: func(m *sdk.Manifest) {
			m.CRDObjects = []any{map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"}}
		}, wantErr: "named"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := ok
			tt.mod(&m)
			err := m.Validate()
			if (err != nil) != (tt.wantErr != "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	m := sdk.Manifest{
		Name: "example", Version: "v1", UI: fstest.MapFS{"a.js": {}},
		CRDs:       [][]byte{[]byte(crdYAML + "---\n" + crdYAML)},
		CRDObjects: []any{map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": map[string]any{"name": "x.y"}}},
	}
	d, err := sdk.NewServer(static(m)).Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.Replicas != sdk.ReplicasAny || !d.HasUI || d.HasBackend || len(d.CRDs) != 3 {
		t.Fatalf("descriptor = %+v", d)
	}
	for _, j := range d.CRDs {
		if !json.Valid(j) {
			t.Fatalf("CRD not JSON: %s", j)
		}
	}
	if _, err := sdk.NewServer(static(sdk.Manifest{Name: "BAD"})).Describe(context.Background()); err == nil {
		t.Fatal("invalid manifest described")
	}
}

func TestDecodeConfig(t *testing.T) {
	type cfg struct {
		Greeting string `json:"greeting"`
	}
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr bool
	}{
		{name: "empty", in: "", want: "keep"},
		{name: "yaml", in: "greeting: hi\n", want: "hi"},
		{name: "json", in: `{"greeting":"yo"}`, want: "yo"},
		{name: "unknown field", in: "greting: typo\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg{Greeting: "keep"}
			err := sdk.HubConfig{Config: []byte(tt.in)}.DecodeConfig(&c)
			if (err != nil) != tt.wantErr || err == nil && c.Greeting != tt.want {
				t.Fatalf("DecodeConfig = %v %+v", err, c)
			}
		})
	}
}
