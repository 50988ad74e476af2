package charts

import (
	"path/filepath"
	"testing"
)

// TestHubProbesAreHTTP (issue 17): with every value set, the hub
// container's probes are kubelet HTTPS GETs of /livez and /readyz on the
// serving port, with no command and no header (so no credential) in the
// pod spec: the hub answers those paths to anonymous callers.
func TestHubProbesAreHTTP(t *testing.T) {
	helm, _ := chartTools(t)
	dir := filepath.Join(repoRoot(t), "charts", "wharf-hub")
	want := map[string]string{"startupProbe": "/livez", "livenessProbe": "/livez", "readinessProbe": "/readyz"}
	for _, s := range valueSets(t, dir) {
		out, err := run(t, nil, helm, append([]string{"template", "rel", dir, "--kube-version", kubeVersion}, valuesArgs(s)...)...)
		if err != nil {
			t.Fatalf("%s: helm template: %v\n%s", s.name, err, out)
		}
		found := 0
		for _, d := range yamlDocs(t, out) {
			if d["kind"] != "StatefulSet" {
				continue
			}
			spec, _ := d["spec"].(map[string]any)
			tmpl, _ := spec["template"].(map[string]any)
			pod, _ := tmpl["spec"].(map[string]any)
			cs, _ := pod["containers"].([]any)
			for _, c := range cs {
				m := c.(map[string]any)
				if m["name"] != "hub" {
					continue
				}
				found++
				for probe, path := range want {
					p, _ := m[probe].(map[string]any)
					get, _ := p["httpGet"].(map[string]any)
					if get == nil || p["exec"] != nil {
						t.Errorf("%s: %s is not an httpGet probe: %v", s.name, probe, p)
						continue
					}
					if get["scheme"] != "HTTPS" || get["path"] != path || get["port"] != "https" || get["httpHeaders"] != nil {
						t.Errorf("%s: %s = %v, want HTTPS GET %s on port https without headers", s.name, probe, get, path)
					}
				}
			}
		}
		if found != 1 {
			t.Errorf("%s: %d hub containers rendered, want 1", s.name, found)
		}
	}
}
