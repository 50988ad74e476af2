package resourceproxy

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// owner identifies the client workspace in owner labels.
type owner struct {
	Cluster   string // logical cluster id
	Workspace string // last segment of the client path
}

func ownerOf(cluster, path string) owner {
	seg := path
	if i := strings.LastIndex(path, ":"); i >= 0 {
		seg = path[i+1:]
	}
	return owner{Cluster: cluster, Workspace: seg}
}

// selector is the label selector of objects the client owns: both labels.
func (o owner) selector() string {
	return labels.SelectorFromSet(labels.Set{OwnerClusterLabel: o.Cluster, OwnerWorkspaceLabel: o.Workspace}).String()
}

// owns reports whether an object's labels carry both owner labels of o.
func (o owner) owns(l map[string]string) bool {
	return l[OwnerClusterLabel] == o.Cluster && l[OwnerWorkspaceLabel] == o.Workspace
}

// injectSelector ANDs the owner selector into a query's labelSelector, so
// a list, watch or deletecollection sees only the client's objects
// whatever selector the caller sent.
func injectSelector(q url.Values, o owner) string {
	sel := o.selector()
	if cur := strings.TrimSpace(q.Get("labelSelector")); cur != "" {
		sel = cur + "," + sel
	}
	q.Set("labelSelector", sel)
	return q.Encode()
}

// injectLabels adds the owner labels to a create, update or patch body.
// overwrite replaces owner labels the caller set (so a client cannot write
// another's); otherwise they are only added where absent. The new body and its content type are returned;
// ok is false when the body is not something labels can be put in (then
// the write is refused with 415: a body the proxy cannot label, such as
// protobuf or CBOR, would reach the target with whatever owner labels the
// caller wrote, another client's included).
func injectLabels(body []byte, contentType string, o owner, overwrite bool) (out []byte, outType string, ok bool) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if strings.TrimSpace(contentType) == "" {
		// kube-apiserver decodes a body without Content-Type as JSON, so
		// it must get the labels as JSON does.
		mt, contentType = "application/json", "application/json"
	}
	switch mt {
	case "application/json", "application/merge-patch+json", "application/apply-patch+yaml":
	case "application/yaml":
		// A create or update body in YAML: labelled, and sent on as the
		// JSON it is.
		j, err := yaml.YAMLToJSON(body)
		if err != nil {
			return body, contentType, false
		}
		out, _, ok := injectLabels(j, "application/json", o, overwrite)
		if !ok {
			return body, contentType, false
		}
		return out, "application/json", true
	case "application/json-patch+json":
		return jsonPatchLabels(body, o)
	default: // protobuf, CBOR: left as they are
		return body, contentType, false
	}
	var obj map[string]any
	j := body
	if mt == "application/apply-patch+yaml" {
		var err error
		if j, err = yaml.YAMLToJSON(body); err != nil {
			return body, contentType, false
		}
	}
	if err := json.Unmarshal(j, &obj); err != nil || obj == nil {
		return body, contentType, false
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		if _, present := obj["metadata"]; present && obj["metadata"] != nil {
			return body, contentType, false
		}
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	lbl, _ := meta["labels"].(map[string]any)
	if lbl == nil {
		lbl = map[string]any{}
		meta["labels"] = lbl
	}
	for k, v := range map[string]string{OwnerClusterLabel: o.Cluster, OwnerWorkspaceLabel: o.Workspace} {
		if _, has := lbl[k]; overwrite || !has {
			lbl[k] = v
		}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return body, contentType, false
	}
	return b, contentType, true // for apply+yaml too: JSON is YAML
}

// jsonPatchLabels appends "add" operations for the owner labels. An add to
// a member of /metadata/labels replaces it and needs the labels map to
// exist, which holds for an owned object (the proxy checked it first).
func jsonPatchLabels(body []byte, o owner) ([]byte, string, bool) {
	var ops []map[string]any
	if err := json.Unmarshal(body, &ops); err != nil {
		return body, "application/json-patch+json", false
	}
	for k, v := range map[string]string{OwnerClusterLabel: o.Cluster, OwnerWorkspaceLabel: o.Workspace} {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels/" + escapePointer(k), "value": v})
	}
	b, err := json.Marshal(ops)
	if err != nil {
		return body, "application/json-patch+json", false
	}
	return b, "application/json-patch+json", true
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// objectLabels reads metadata.labels of a JSON object.
func objectLabels(body []byte) (map[string]string, error) {
	var obj struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, fmt.Errorf("decode object: %w", err)
	}
	return obj.Metadata.Labels, nil
}
