package kube

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Binaries are the paths of the executables a Cluster starts.
type Binaries struct {
	APIServer string
	Etcd      string
	Kubectl   string
}

// Environment variables that point the fixture at prebuilt binaries.
const (
	EnvAPIServerBin = "KUBE_APISERVER_BIN"
	EnvEtcdBin      = "ETCD_BIN"
	EnvKubectl      = "KUBECTL"
)

// ResolveBinaries returns the binaries to run. KUBE_APISERVER_BIN and
// ETCD_BIN win when set; with both set nothing is built and kubectl comes
// from KubectlPath's order. Otherwise the tools cache is built on demand
// (minutes cold, seconds warm) and fills whatever the environment left unset.
func ResolveBinaries(t testing.TB) Binaries {
	t.Helper()
	b := Binaries{
		APIServer: os.Getenv(EnvAPIServerBin),
		Etcd:      os.Getenv(EnvEtcdBin),
		Kubectl:   os.Getenv(EnvKubectl),
	}
	if b.APIServer != "" && b.Etcd != "" && b.Kubectl == "" {
		b.Kubectl = KubectlPath(t)
	}
	if b.APIServer == "" || b.Etcd == "" || b.Kubectl == "" {
		dir, err := BuildTools()
		if err != nil {
			t.Fatalf("kube fixture: building kube tools: %v", err)
		}
		fill(&b.APIServer, filepath.Join(dir, "kube-apiserver"))
		fill(&b.Etcd, filepath.Join(dir, "etcd"))
		fill(&b.Kubectl, filepath.Join(dir, "kubectl"))
	}
	for _, p := range []string{b.APIServer, b.Etcd, b.Kubectl} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("kube fixture: binary: %v", err)
		}
	}
	return b
}

func fill(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

// KubectlPath returns a kubectl for end-to-end tests: $KUBECTL if set, else
// kubectl on PATH, else the v1.37.2 kubectl from the tools cache (built on
// demand). The PATH one may be any version; set KUBECTL to pin it.
func KubectlPath(t testing.TB) string {
	t.Helper()
	p, err := kubectlPath(os.Getenv, exec.LookPath, BuildTools)
	if err != nil {
		t.Fatalf("kube fixture: %v", err)
	}
	return p
}

// kubectlPath is KubectlPath with its lookups passed in, so the order can
// be tested without changing the process environment.
func kubectlPath(getenv func(string) string, lookPath func(string) (string, error), build func() (string, error)) (string, error) {
	if p := getenv(EnvKubectl); p != "" {
		return p, nil
	}
	if p, err := lookPath("kubectl"); err == nil {
		return p, nil
	}
	dir, err := build()
	if err != nil {
		return "", fmt.Errorf("building kubectl: %w", err)
	}
	return filepath.Join(dir, "kubectl"), nil
}

// BuildTools runs test/tools/build.sh and returns the cache directory that
// holds kube-apiserver, etcd and kubectl. The script returns at once when the
// cache for the current go.mod/go.sum and flags is complete, and serialises
// concurrent builds with a lock, so parallel test packages are safe.
func BuildTools() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "test", "tools", "build.sh")
	cmd := exec.Command("bash", script)
	var out bytes.Buffer
	cmd.Stdout = &out
	// Progress goes straight to the test binary's stderr (an *os.File, so
	// no copying goroutine) to show a long cold build is alive.
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w", script, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) == 0 {
		return "", fmt.Errorf("%s printed no directory", script)
	}
	return lines[len(lines)-1], nil
}

// RepoRoot finds the repository root by walking up from the working
// directory (go test runs each package in its own directory) to the
// directory that holds test/tools/go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("getwd: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "test", "tools", "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root (with test/tools/go.mod) not found above the working directory")
		}
		dir = parent
	}
}
