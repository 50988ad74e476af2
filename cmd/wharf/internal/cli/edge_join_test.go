package cli

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	edgesv1 "github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIBdzCCAR2gAwIBAgIBATAKBggqhkjOPQQDAjAAMB4XDTI2\n'quote\" $dollar `tick` ;&|\n-----END CERTIFICATE-----\n"

// writeKubeconfig writes a kubeconfig with one context "hub" (server
// https://hub.example:9443/clusters/root:acme) and returns its path.
func writeKubeconfig(t *testing.T, mutate func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cl := clientcmdapi.NewCluster()
	cl.Server = "https://hub.example:9443/clusters/root:acme"
	cl.CertificateAuthorityData = []byte(testCA)
	u := clientcmdapi.NewAuthInfo()
	u.Token = "secret-token"
	if mutate != nil {
		mutate(cl, u)
	}
	cfg.Clusters["hub"], cfg.AuthInfos["hub"] = cl, u
	kctx := clientcmdapi.NewContext()
	kctx.Cluster, kctx.AuthInfo = "hub", "hub"
	cfg.Contexts["hub"] = kctx
	cfg.CurrentContext = "hub"
	path := filepath.Join(t.TempDir(), "config")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func testEdge(typ edgesv1.EdgeType) *edgesv1.Edge {
	return &edgesv1.Edge{
		ObjectMeta: metav1.ObjectMeta{Name: "lab", Annotations: map[string]string{clusterAnnotation: "abcdefghij012345"}},
		Spec:       edgesv1.EdgeSpec{Type: typ},
	}
}

// TestJoinLineIsOneShellWord prints the join instructions and runs the
// one "wharf-agent run " line through a real /bin/sh, with wharf-agent a
// shell function echoing its arguments: the bundle must arrive as one
// argument and decode to the bundle that was built.
func TestJoinLineIsOneShellWord(t *testing.T) {
	c, err := hubFlags{kubeconfig: writeKubeconfig(t, nil)}.connect()
	if err != nil {
		t.Fatal(err)
	}
	e := testEdge(edgesv1.TypeKubernetes)
	bundle, err := buildBundle(c, e, "abcdefghij012345", "tok-123")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	now := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	writeJoin(&out, e, bundle, "2026-12-01T15:00:00Z", now)
	var runLines []string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "wharf-agent run ") {
			runLines = append(runLines, l)
		}
	}
	if len(runLines) != 1 {
		t.Fatalf("want exactly one line starting with \"wharf-agent run \", got %d:\n%s", len(runLines), out.String())
	}
	if !strings.Contains(out.String(), "expires 2026-12-01T15:00:00Z (in 60m)") {
		t.Errorf("expiry missing from:\n%s", out.String())
	}
	// A stand-in wharf-agent on PATH that prints its arguments one a line.
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "wharf-agent"), []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sh := exec.Command("/bin/sh", "-c", runLines[0])
	sh.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	got, err := sh.Output()
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	want := []string{"run", "--join", bundle, "--state-dir", agentStateDir}
	if strings.Join(args, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("shell saw %q, want %q", args, want)
	}
	b, err := protocol.DecodeBundle(args[2])
	if err != nil {
		t.Fatal(err)
	}
	wantB := protocol.Bundle{HubURL: "https://hub.example:9443", CA: testCA, Cluster: "abcdefghij012345", Edge: "lab", Type: "kubernetes", Token: "tok-123"}
	if b != wantB {
		t.Fatalf("bundle round trip: got %+v, want %+v", b, wantB)
	}
}

// TestBundleCA: the CA comes from inline data or the file the context
// names, and a context without one refuses to build a bundle.
func TestBundleCA(t *testing.T) {
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, []byte("file-ca"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)
		wantCA  string
		wantErr string
	}{
		{"data", nil, testCA, ""},
		{"file", func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.CertificateAuthorityData, c.CertificateAuthority = nil, caFile
		}, "file-ca", ""},
		{"none", func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.CertificateAuthorityData = nil }, "", "no certificate-authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := hubFlags{kubeconfig: writeKubeconfig(t, tc.mutate)}.connect()
			if err != nil {
				t.Fatal(err)
			}
			s, err := buildBundle(c, testEdge(edgesv1.TypeServer), "abcdefghij012345", "tok")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := protocol.DecodeBundle(s)
			if err != nil {
				t.Fatal(err)
			}
			if b.CA != tc.wantCA || b.Type != "server" {
				t.Fatalf("bundle CA %q type %q", b.CA, b.Type)
			}
		})
	}
}

func TestNewEdgeObject(t *testing.T) {
	u, err := newEdgeObject("web-1", edgesv1.TypeServer, 2222)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Object["spec"]; got.(map[string]any)["server"].(map[string]any)["sshPort"] != int64(2222) {
		t.Fatalf("spec = %v", got)
	}
	if _, ok := u.Object["status"]; ok {
		t.Fatal("create must not send a status")
	}
	if u.GetAPIVersion() != "edges.wharf.dev/v1alpha1" || u.GetKind() != "Edge" {
		t.Fatalf("type meta %s %s", u.GetAPIVersion(), u.GetKind())
	}
	if _, err := newEdgeObject("lab", edgesv1.TypeKubernetes, 22); err == nil {
		t.Fatal("--ssh-port accepted for a kubernetes edge")
	}
	if _, err := newEdgeObject("lab", "vm", 0); err == nil {
		t.Fatal("unknown type accepted")
	}
}

// TestPrintJoinMintsAsCaller: the join-token request goes to the edge's
// path on the hub root, as the caller, in the edge's workspace; the bundle
// printed carries the minted token, and a refusal reads like kubectl's.
func TestPrintJoinMintsAsCaller(t *testing.T) {
	var hits int
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		want := "/services/providers/edges/edgeproxy/clusters/abcdefghij012345/apis/edges.wharf.dev/v1alpha1/edges/lab/join-token"
		if r.Method != http.MethodPost || r.URL.Path != want || r.Header.Get("X-Wharf-Workspace") != "abcdefghij012345" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
			return
		}
		if r.Header.Get("Authorization") != "Bearer secret-token" {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"nope","reason":"Forbidden","code":403}`)
			return
		}
		fmt.Fprint(w, `{"token":"minted-1","expiresAt":"2030-01-01T00:00:00Z"}`)
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	connect := func(token string) *hubConn {
		c, err := hubFlags{kubeconfig: writeKubeconfig(t, func(cl *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			cl.Server, cl.CertificateAuthorityData, u.Token = srv.URL+"/clusters/root:acme", ca, token
		})}.connect()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var out bytes.Buffer
	if err := printJoin(context.Background(), &out, connect("secret-token"), testEdge(edgesv1.TypeKubernetes)); err != nil {
		t.Fatal(err)
	}
	var bundle string
	for _, f := range strings.Fields(out.String()) {
		if strings.HasPrefix(f, "wharf-join-v1.") {
			bundle = f
		}
	}
	b, err := protocol.DecodeBundle(bundle)
	if err != nil || b.Token != "minted-1" || b.HubURL != srv.URL || b.CA != string(ca) {
		t.Fatalf("bundle %+v %v from:\n%s", b, err, out.String())
	}
	err = printJoin(context.Background(), &out, connect("other-token"), testEdge(edgesv1.TypeKubernetes))
	if got := Message(err); got != "Error from server (Forbidden): nope" {
		t.Fatalf("refusal: %q", got)
	}
	if hits != 2 {
		t.Fatalf("%d join-token requests, want 2", hits)
	}
}
