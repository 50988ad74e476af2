package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Validate checks a Describe answer before the hub builds routes, catalog
// entries and CRDs from it. A plugin is a separate binary, possibly not built
// with this SDK, so its answer is input, not truth.
func (d *Descriptor) Validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Label(d.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("name %q: %s", d.Name, strings.Join(msgs, "; ")))
	}
	if d.Replicas != ReplicasAny && d.Replicas != ReplicasSingle {
		errs = append(errs, fmt.Errorf("replicas %q", d.Replicas))
	}
	for _, p := range d.PublicPaths {
		// The hub matches these as prefixes of a cleaned path; anything
		// unclean could never match or would match too much.
		if !strings.HasPrefix(p, "/") || strings.Contains(p, "..") || strings.Contains(p, "//") {
			errs = append(errs, fmt.Errorf("public path %q: want an absolute, clean prefix", p))
		}
	}
	for i, raw := range d.CRDs {
		var crd struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(raw, &crd); err != nil {
			errs = append(errs, fmt.Errorf("crd %d: %w", i, err))
			continue
		}
		if crd.Kind != "CustomResourceDefinition" || !strings.HasPrefix(crd.APIVersion, "apiextensions.k8s.io/") || crd.Metadata.Name == "" {
			errs = append(errs, fmt.Errorf("crd %d: not a named apiextensions.k8s.io CustomResourceDefinition", i))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid provider manifest: %w", err)
	}
	return nil
}
