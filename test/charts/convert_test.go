package charts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestConvert(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       string
		quantity bool
		want     string
	}{
		{"closed object", `{"type":"object","properties":{"a":{"type":"string","format":"byte"}}}`, false,
			`{"type":["object","null"],"properties":{"a":{"type":["string","null"]}},"additionalProperties":false}`},
		{"open object", `{"type":"object","properties":{"a":{"type":"integer"}},"x-kubernetes-preserve-unknown-fields":true}`, false,
			`{"type":["object","null"],"properties":{"a":{"type":["integer","null"]}},"x-kubernetes-preserve-unknown-fields":true}`},
		{"map", `{"type":"object","additionalProperties":{"type":"string"}}`, false,
			`{"type":["object","null"],"additionalProperties":{"type":["string","null"]}}`},
		{"int-or-string", `{"type":"string","format":"int-or-string"}`, false,
			`{"type":["string","integer","number","null"]}`},
		{"quantity", `{"type":"string","description":"q"}`, true,
			`{"type":["string","integer","number","null"],"description":"q"}`},
		{"ref siblings dropped", `{"$ref":"#/definitions/x","description":"d"}`, false, `{"$ref":"#/definitions/x"}`},
		{"array", `{"type":"array","items":{"$ref":"#/definitions/y"}}`, false,
			`{"type":["array","null"],"items":{"$ref":"#/definitions/y"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in, want any
			if err := json.Unmarshal([]byte(tc.in), &in); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			got := convert(in, tc.quantity)
			if !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				t.Fatalf("got %s\nwant %s", g, tc.want)
			}
		})
	}
}

// TestWriteReachable: a kind's file holds what it reaches, recursion
// included, and nothing else; every GVK of the definition gets a file.
func TestWriteReachable(t *testing.T) {
	var defs map[string]any
	if err := json.Unmarshal([]byte(`{
	  "a.Thing": {"type":"object","properties":{"spec":{"$ref":"#/definitions/a.Spec"}},
	    "x-kubernetes-group-version-kind":[{"group":"x.example.com","version":"v1","kind":"Thing"},{"group":"","version":"v1","kind":"Thing"}]},
	  "a.Spec": {"type":"object","properties":{"child":{"$ref":"#/definitions/a.Spec"}}},
	  "a.Unrelated": {"type":"string"}
	}`), &defs); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gvks, err := Write(dir, defs)
	if err != nil || len(gvks) != 2 {
		t.Fatalf("Write: %v, %v", gvks, err)
	}
	for _, p := range []string{filepath.Join(dir, "x.example.com", "thing-v1.json"), filepath.Join(dir, "v1", "thing-v1.json")} {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Ref  string         `json:"$ref"`
			Defs map[string]any `json:"definitions"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		if s.Ref != "#/definitions/a.Thing" || len(s.Defs) != 2 || s.Defs["a.Spec"] == nil {
			t.Fatalf("%s: ref %q, definitions %v", p, s.Ref, s.Defs)
		}
	}
}
