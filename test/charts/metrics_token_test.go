package charts

import (
	"encoding/csv"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestChartMetricsToken (review17:chart/12): the ServiceMonitor scrapes
// with a metrics-only identity, never a hub administrator's token. With
// no token Secret named, the chart generates one: the ServiceMonitor reads
// its "token", the hub's --token-auth-file is its "tokens.csv", and that
// file lists the token once, as user wharf-metrics in group
// system:monitoring only (whoever reads the Secret can scrape, nothing
// more). An operator's own token file cannot be combined with a generated
// token (the hub reads one file), so that render fails with instructions.
func TestChartMetricsToken(t *testing.T) {
	helm, _ := chartTools(t)
	dir := filepath.Join(repoRoot(t), "charts", "wharf-hub")
	template := func(args ...string) (string, error) {
		return run(t, nil, helm, append([]string{"template", "rel", dir, "--namespace", "wharf", "--kube-version", kubeVersion}, args...)...)
	}

	t.Run("review17:chart/12/generated metrics-only token", func(t *testing.T) {
		out, err := template("-f", filepath.Join(dir, "ci", "metrics-values.yaml"))
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var (
			secrets = map[string]corev1.Secret{}
			hub     appsv1.StatefulSet
			monitor map[string]any
		)
		for _, doc := range yamlDocs(t, out) {
			raw, _ := yaml.Marshal(doc)
			switch doc["kind"] {
			case "Secret":
				var s corev1.Secret
				if err := yaml.Unmarshal(raw, &s); err != nil {
					t.Fatal(err)
				}
				secrets[s.Name] = s
			case "StatefulSet":
				var s appsv1.StatefulSet
				if err := yaml.Unmarshal(raw, &s); err != nil {
					t.Fatal(err)
				}
				if s.Spec.Template.Labels["app.kubernetes.io/component"] == "hub" {
					hub = s
				}
			case "ServiceMonitor":
				monitor = doc
			}
		}
		if monitor == nil {
			t.Fatal("no ServiceMonitor rendered")
		}
		ep := monitor["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
		ref := ep["bearerTokenSecret"].(map[string]any)
		sec, ok := secrets[ref["name"].(string)]
		if !ok {
			t.Fatalf("ServiceMonitor token Secret %v is not rendered", ref)
		}
		token := secretValue(t, sec, ref["key"].(string))
		if len(token) < 32 {
			t.Fatalf("generated token is %d characters", len(token))
		}

		// The hub's token file is that Secret's tokens.csv.
		var fileSecret, fileKey string
		for _, v := range hub.Spec.Template.Spec.Volumes {
			if v.Name == "tokens" && v.Secret != nil {
				fileSecret = v.Secret.SecretName
				if len(v.Secret.Items) == 1 {
					fileKey = v.Secret.Items[0].Key
				}
			}
		}
		if fileSecret != sec.Name || fileKey == "" {
			t.Fatalf("hub token volume from %q key %q, want %q", fileSecret, fileKey, sec.Name)
		}
		args := strings.Join(hub.Spec.Template.Spec.Containers[0].Args, " ")
		if !strings.Contains(args, "--token-auth-file=/etc/wharf/tokens/"+fileKey) {
			t.Fatalf("hub args lack the token file: %s", args)
		}
		if strings.Contains(args, "--admin-user=wharf-metrics") || strings.Contains(args, "--admin-group=system:monitoring") {
			t.Fatalf("the scraper is a hub administrator: %s", args)
		}
		rows, err := csv.NewReader(strings.NewReader(secretValue(t, sec, fileKey))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || len(rows[0]) != 4 || rows[0][0] != token || rows[0][1] != "wharf-metrics" || rows[0][3] != "system:monitoring" {
			t.Fatalf("token file rows %q, want one: <token>,wharf-metrics,<uid>,system:monitoring", redact(rows, token))
		}
	})

	t.Run("review17:chart/12/operator's token Secret", func(t *testing.T) {
		out, err := template("-f", filepath.Join(dir, "ci", "operations-values.yaml"))
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if strings.Contains(out, "templates/metrics-token.yaml") {
			t.Fatal("a token was generated although one was named")
		}
		if !strings.Contains(out, "name: wharf-metrics-token\n        key: token") {
			t.Fatalf("ServiceMonitor does not use the named Secret:\n%s", out)
		}
	})

	t.Run("review17:chart/12/own token file needs an own metrics token", func(t *testing.T) {
		out, err := template("--set", "metrics.serviceMonitor.enabled=true", "--set", "auth.tokenAuthSecret.name=people")
		if err == nil || !strings.Contains(out, "system:monitoring") {
			t.Fatalf("rendered (%v):\n%s", err, out)
		}
	})
}

func secretValue(t *testing.T, s corev1.Secret, key string) string {
	t.Helper()
	if v, ok := s.StringData[key]; ok {
		return v
	}
	v, ok := s.Data[key]
	if !ok {
		t.Fatalf("Secret %s has no key %q", s.Name, key)
	}
	// Secret data is base64 in YAML; []byte fields decode it.
	return string(v)
}

// redact keeps the token out of a failure message.
func redact(rows [][]string, token string) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		for _, f := range r {
			out[i] = append(out[i], strings.ReplaceAll(f, token, "<token>"))
		}
	}
	return out
}
