package charts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// GVK is one x-kubernetes-group-version-kind of an OpenAPI definition.
type GVK struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// APIVersion is the apiVersion field of objects of this kind.
func (g GVK) APIVersion() string {
	if g.Group == "" {
		return g.Version
	}
	return g.Group + "/" + g.Version
}

// SchemaPath is where kubeconform finds the schema of g under dir with
// the -schema-location template LocationTemplate(dir) (kubeconform's
// .Group is the apiVersion's first element: the group, or "v1" for core).
func SchemaPath(dir string, g GVK) string {
	first := strings.SplitN(g.APIVersion(), "/", 2)[0]
	return filepath.Join(dir, first, strings.ToLower(g.Kind)+"-"+g.Version+".json")
}

// LocationTemplate is kubeconform's -schema-location for Write's output.
func LocationTemplate(dir string) string {
	return filepath.Join(dir, "{{ .Group }}", "{{ .ResourceKind }}-{{ .ResourceAPIVersion }}.json")
}

// quantities are definitions that are strings in OpenAPI but are written
// as numbers as often (cpu: 1, memory: 512).
var quantities = map[string]bool{"io.k8s.apimachinery.pkg.api.resource.Quantity": true}

// Write turns OpenAPI v2 definitions (name → schema) into one standalone,
// strict JSON schema file per kind named in x-kubernetes-group-version-kind:
// each holds the definitions its kind reaches under "definitions", so
// recursive types (JSONSchemaProps) need no inlining. Strict means an
// object schema with properties admits no other property unless it says
// so (additionalProperties, x-kubernetes-preserve-unknown-fields). It
// returns the kinds written.
func Write(dir string, defs map[string]any) ([]GVK, error) {
	conv := map[string]any{}
	for name, d := range defs {
		conv[name] = convert(d, quantities[name])
	}
	var out []GVK
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		d, _ := defs[name].(map[string]any)
		raw, err := json.Marshal(d["x-kubernetes-group-version-kind"])
		if err != nil || d["x-kubernetes-group-version-kind"] == nil {
			continue
		}
		var gvks []GVK
		if err := json.Unmarshal(raw, &gvks); err != nil {
			return nil, fmt.Errorf("%s: x-kubernetes-group-version-kind: %w", name, err)
		}
		reach := map[string]any{}
		collect(name, conv, reach)
		schema := map[string]any{"$ref": ref(name), "definitions": reach}
		body, err := json.MarshalIndent(schema, "", " ")
		if err != nil {
			return nil, err
		}
		for _, g := range gvks {
			p := SchemaPath(dir, g)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(p, body, 0o644); err != nil {
				return nil, err
			}
			out = append(out, g)
		}
	}
	return out, nil
}

func ref(name string) string { return "#/definitions/" + strings.ReplaceAll(name, "/", "~1") }

// collect adds name and every definition it references to reach.
func collect(name string, defs, reach map[string]any) {
	if _, ok := reach[name]; ok {
		return
	}
	d, ok := defs[name]
	if !ok {
		return
	}
	reach[name] = d
	walk(d, func(r string) {
		collect(strings.ReplaceAll(strings.TrimPrefix(r, "#/definitions/"), "~1", "/"), defs, reach)
	})
}

func walk(v any, onRef func(string)) {
	switch t := v.(type) {
	case map[string]any:
		if r, ok := t["$ref"].(string); ok {
			onRef(r)
		}
		for _, c := range t {
			walk(c, onRef)
		}
	case []any:
		for _, c := range t {
			walk(c, onRef)
		}
	}
}

// convert makes one OpenAPI schema a JSON schema: int-or-string and
// quantities accept strings and numbers, every typed value may be null
// (helm renders empty values as null, which the API server accepts), and
// objects with properties are closed.
func convert(v any, quantity bool) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, c := range m {
		switch k {
		case "properties":
			props := map[string]any{}
			for pn, pv := range c.(map[string]any) {
				props[pn] = convert(pv, false)
			}
			out[k] = props
		case "items", "additionalProperties":
			if b, isBool := c.(bool); isBool {
				out[k] = b
			} else {
				out[k] = convert(c, false)
			}
		case "allOf", "anyOf", "oneOf":
			var l []any
			for _, e := range c.([]any) {
				l = append(l, convert(e, false))
			}
			out[k] = l
		case "format", "x-kubernetes-group-version-kind":
			// Formats are not asserted by kubeconform; the GVK list is ours.
		default:
			out[k] = c
		}
	}
	if r, ok := out["$ref"]; ok {
		// In OpenAPI v2 a $ref's siblings (description) mean nothing.
		return map[string]any{"$ref": r}
	}
	if m["x-kubernetes-int-or-string"] == true || m["format"] == "int-or-string" || quantity {
		delete(out, "type")
		out["type"] = []any{"string", "integer", "number", "null"}
		return out
	}
	if t, ok := out["type"].(string); ok {
		out["type"] = []any{t, "null"}
	}
	if _, has := out["properties"]; has && out["additionalProperties"] == nil && m["x-kubernetes-preserve-unknown-fields"] != true {
		out["additionalProperties"] = false
	}
	return out
}
