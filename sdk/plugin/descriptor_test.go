package plugin

import (
	"strings"
	"testing"
)

func TestDescriptorValidate(t *testing.T) {
	crd := []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"a.b"}}`)
	tests := []struct {
		name    string
		mod     func(*Descriptor)
		wantErr string
	}{
		{name: "ok", mod: func(*Descriptor) {}},
		{name: "bad name", mod: func(d *Descriptor) { d.Name = "a/b" }, wantErr: "name"},
		{name: "no replicas", mod: func(d *Descriptor) { d.Replicas = "" }, wantErr: "replicas"},
		{name: "relative public path", mod: func(d *Descriptor) { d.PublicPaths = []string{"agent"} }, wantErr: "public path"},
		{name: "dotdot public path", mod: func(d *Descriptor) { d.PublicPaths = []string{"/a/../b"} }, wantErr: "public path"},
		{name: "crd not json", mod: func(d *Descriptor) { d.CRDs = [][]byte{[]byte("kind: x")} }, wantErr: "crd 0"},
		{name: "not a crd", mod: func(d *Descriptor) { d.CRDs = [][]byte{[]byte(`{"kind":"Secret"}`)} }, wantErr: "crd 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &Descriptor{Name: "edges", Replicas: ReplicasSingle, PublicPaths: []string{"/agent/"}, CRDs: [][]byte{crd}}
			tt.mod(d)
			err := d.Validate()
			if (err != nil) != (tt.wantErr != "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}
