package kube

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
		dir, err := buildToolsFor(t)
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

// KubectlPath returns a kubectl for end-to-end tests: $KUBECTL if set;
// else, when KUBE_APISERVER_BIN and ETCD_BIN name prebuilt binaries (so
// that nothing is built), kubectl on PATH; else the v1.37.2 kubectl of the
// tools cache (built on demand; make test builds it first). A kubectl on
// PATH may be any version (this machine's is a gcloud v1.32 dispatcher)
// and tests compare kubectl's output with v1.37's, so it is not preferred
// to the cache.
func KubectlPath(t testing.TB) string {
	t.Helper()
	p, err := kubectlPath(os.Getenv, exec.LookPath, func() (string, error) { return buildToolsFor(t) })
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
	if getenv(EnvAPIServerBin) != "" && getenv(EnvEtcdBin) != "" {
		if p, err := lookPath("kubectl"); err == nil {
			return p, nil
		}
	}
	dir, err := build()
	if err != nil {
		return "", fmt.Errorf("building kubectl: %w", err)
	}
	return filepath.Join(dir, "kubectl"), nil
}
