package kube_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/wharfhub/wharf/test/kube"
)

// TestKubectlAgainstFixture runs the real kubectl built with the fixture
// (same version as the server) through the kubeconfigs the fixture writes.
func TestKubectlAgainstFixture(t *testing.T) {
	c := kube.Start(t, kube.Options{})
	kubectl := c.Binaries().Kubectl
	ctx := testContext(t)
	admin := c.Kubeconfig()

	out := runKubectl(ctx, t, kubectl, admin, "", "version", "-o", "json")
	var v struct {
		ServerVersion struct{ GitVersion string } `json:"serverVersion"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("kubectl version output: %v\n%s", err, out)
	}
	if v.ServerVersion.GitVersion != "v1.37.2" {
		t.Fatalf("server version %q, want v1.37.2 (are the -X version flags set?)", v.ServerVersion.GitVersion)
	}

	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: greeting, namespace: default}\ndata: {hello: world}\n"
	runKubectl(ctx, t, kubectl, admin, manifest, "apply", "--server-side", "-f", "-")
	if got := runKubectl(ctx, t, kubectl, admin, "", "get", "configmap", "greeting", "-o", "jsonpath={.data.hello}"); got != "world" {
		t.Fatalf("configmap data = %q, want world", got)
	}

	carol := c.WriteKubeconfig(t, "carol", c.ImpersonateConfig("carol"))
	if got := runKubectlStatus(ctx, t, kubectl, carol, "auth", "can-i", "get", "configmaps"); strings.TrimSpace(got) != "no" {
		t.Fatalf("carol can-i get configmaps = %q, want no", got)
	}
}

func runKubectl(ctx context.Context, t *testing.T, kubectl, kubeconfig, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// runKubectlStatus is for commands such as "auth can-i" that answer "no"
// with exit status 1: it returns stdout whatever the status.
func runKubectlStatus(ctx context.Context, t *testing.T, kubectl, kubeconfig string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	out, err := cmd.Output()
	if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}
