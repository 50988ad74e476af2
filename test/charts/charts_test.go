package charts

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const kubeVersion = "1.37.2"

// valueSet is one rendering of a chart: the defaults ("") or a ci/ file.
type valueSet struct{ name, file string }

func valueSets(t *testing.T, chartDir string) []valueSet {
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no value sets under %s/ci: %v", chartDir, err)
	}
	sets := []valueSet{{name: "defaults"}}
	for _, f := range files {
		sets = append(sets, valueSet{name: strings.TrimSuffix(filepath.Base(f), "-values.yaml"), file: f})
	}
	return sets
}

func valuesArgs(s valueSet, extra ...string) []string {
	if s.file != "" {
		extra = append(extra, "-f", s.file)
	}
	return extra
}

// TestCharts lints and renders both charts with every value set and
// validates every object with kubeconform against generated schemas.
func TestCharts(t *testing.T) {
	helm, kubeconform := chartTools(t)
	schemas := generateSchemas(t)
	root := repoRoot(t)
	rendered := map[string]string{}
	for _, chart := range []string{"wharf-hub", "wharf-agent"} {
		dir := filepath.Join(root, "charts", chart)
		for _, s := range valueSets(t, dir) {
			t.Run(chart+"/"+s.name, func(t *testing.T) {
				if out, err := run(t, nil, helm, append([]string{"lint", "--strict", "--kube-version", kubeVersion, dir}, valuesArgs(s)...)...); err != nil {
					t.Fatalf("helm lint: %v\n%s", err, out)
				}
				out, err := run(t, nil, helm, append([]string{"template", "rel", dir, "--namespace", "wharf", "--kube-version", kubeVersion}, valuesArgs(s)...)...)
				if chart == "wharf-agent" && s.name == "defaults" {
					// An agent needs its edge: the defaults must be refused,
					// saying what is missing.
					if err == nil || !strings.Contains(out, "set joinBundleSecret.name, or edge.name") {
						t.Fatalf("helm template with no edge: %v, want the missing values named\n%s", err, out)
					}
					return
				}
				if err != nil {
					t.Fatalf("helm template: %v\n%s", err, out)
				}
				rendered[chart+"/"+s.name] = out
				docs := yamlDocs(t, out)
				if len(docs) == 0 {
					t.Fatal("nothing rendered")
				}
				conform(t, kubeconform, schemas, out, len(docs))
			})
		}
	}

	t.Run("kubeconform refuses an unknown field", func(t *testing.T) {
		out := rendered["wharf-hub/defaults"]
		if out == "" {
			t.Fatal("wharf-hub defaults did not render")
		}
		bad := strings.Replace(out, "podManagementPolicy: Parallel", "podManagementPolicy: Parallel\n  replicaCnt: 3", 1)
		if bad == out {
			t.Fatal("no StatefulSet to break")
		}
		if res, err := run(t, []byte(bad), kubeconform, conformArgs(schemas)...); err == nil {
			t.Fatalf("kubeconform accepted an unknown StatefulSet field:\n%s", res)
		}
	})
	t.Run("hub kinds", func(t *testing.T) {
		good := mustRead(t, filepath.Join("testdata", "wharf-objects.yaml"))
		conform(t, kubeconform, schemas, good, len(yamlDocs(t, good)))
		bad := strings.Replace(good, "provider: edges", "provider: edges\n  providr: typo", 1)
		if res, err := run(t, []byte(bad), kubeconform, conformArgs(schemas)...); err == nil {
			t.Fatalf("kubeconform accepted an unknown ProviderBinding field:\n%s", res)
		}
	})
	t.Run("schema refuses an unknown value", func(t *testing.T) {
		for _, chart := range []string{"wharf-hub", "wharf-agent"} {
			out, err := run(t, nil, helm, "lint", "--strict", "--kube-version", kubeVersion, filepath.Join(root, "charts", chart), "--set", "replicaCont=3")
			if err == nil || !strings.Contains(out, "replicaCont") {
				t.Errorf("%s: helm lint accepted an undocumented value: %v\n%s", chart, err, out)
			}
		}
	})
}

func conformArgs(schemas string) []string {
	return []string{"-strict", "-summary", "-output", "json", "-kubernetes-version", kubeVersion,
		"-schema-location", LocationTemplate(schemas), "-"}
}

// conform runs kubeconform on a stream; every object must be valid,
// none skipped for want of a schema.
func conform(t *testing.T, kubeconform, schemas, stream string, objects int) {
	t.Helper()
	out, err := run(t, []byte(stream), kubeconform, conformArgs(schemas)...)
	if err != nil {
		t.Fatalf("kubeconform: %v\n%s", err, out)
	}
	var res struct {
		Summary struct{ Valid, Invalid, Errors, Skipped int }
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("kubeconform output: %v\n%s", err, out)
	}
	if s := res.Summary; s.Valid != objects || s.Invalid+s.Errors+s.Skipped != 0 {
		t.Fatalf("kubeconform: %+v for %d objects\n%s", s, objects, out)
	}
}

// TestValueSetsCoverEveryValue: each value documented in values.yaml is
// set by at least one ci/ value set, so the checks above render every
// option at least once.
func TestValueSetsCoverEveryValue(t *testing.T) {
	root := repoRoot(t)
	for _, chart := range []string{"wharf-hub", "wharf-agent"} {
		dir := filepath.Join(root, "charts", chart)
		defaults := leaves(t, mustRead(t, filepath.Join(dir, "values.yaml")))
		covered := map[string]bool{}
		for _, s := range valueSets(t, dir)[1:] {
			for p := range leaves(t, mustRead(t, s.file)) {
				covered[p] = true
			}
		}
		var missing []string
		for p := range defaults {
			if !covered[p] {
				missing = append(missing, p)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("%s: no ci/ value set sets %v", chart, missing)
		}
	}
}

// leaves are the dotted paths of a values file's scalars, lists and empty
// maps (a map with keys is descended into).
func leaves(t *testing.T, doc string) map[string]bool {
	out := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		m, ok := v.(map[string]any)
		if !ok || len(m) == 0 || prefix == "providers" {
			out[prefix] = true
			return
		}
		for k, c := range m {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			// Free-form maps (labels, claims, resources): any key counts.
			if regexp.MustCompile(`(annotations|labels|Labels|Annotations|requiredClaims|nodeSelector|requests|limits)$`).MatchString(prefix) {
				out[prefix] = true
				return
			}
			walk(p, c)
		}
	}
	docs := yamlDocs(t, doc)
	if len(docs) != 1 {
		t.Fatalf("a values file is one YAML document, got %d", len(docs))
	}
	walk("", docs[0])
	return out
}
