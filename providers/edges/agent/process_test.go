package agent

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/wharfhub/wharf/test/procnet"
)

// buildAgent builds cmd/wharf-agent into a temp dir.
func buildAgent(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "wharf-agent")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	out, err := exec.Command(goBin, "build", "-o", bin, "github.com/wharfhub/wharf/cmd/wharf-agent").CombinedOutput()
	if err != nil {
		t.Fatalf("building wharf-agent: %v\n%s", err, out)
	}
	return bin
}

// TestAgentProcessListensOnNothing runs the real wharf-agent binary as a
// kubernetes edge and, while its tunnel serves requests, finds no
// listening TCP socket in the process; then SIGTERM stops it cleanly.
func TestAgentProcessListensOnNothing(t *testing.T) {
	bin := buildAgent(t)
	hub := newTestHub(t, "c0ffee0000000004", "lab")
	rec := newRecorder(t)
	rc := rec.restConfig()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["edge"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData}
	kc.AuthInfos["agent"] = &clientcmdapi.AuthInfo{Token: rc.BearerToken}
	kc.Contexts["edge"] = &clientcmdapi.Context{Cluster: "edge", AuthInfo: "agent"}
	kc.CurrentContext = "edge"
	kcPath := filepath.Join(t.TempDir(), "edge.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kcPath); err != nil {
		t.Fatal(err)
	}

	var logs bytes.Buffer
	const token = "process-join-SECRET"
	cmd := exec.Command(bin, "run", "--join", hub.bundle("kubernetes", token), "--state-dir", filepath.Join(t.TempDir(), "st"),
		"--kubeconfig", kcPath, "--backoff-max", "200ms", "--tunnel-read-deadline", "2s")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.Env = append(os.Environ(), "KUBECONFIG=/nonexistent") // --kubeconfig wins
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("agent output:\n%s", logs.String())
		}
	})

	// Several requests, so pickups (fresh websockets) have happened too.
	client := hub.httpClient()
	for i := 0; i < 3; i++ {
		if code, body := getAs(t, client, "/api", "alice"); code != 200 {
			t.Fatalf("through the agent process: %d %s", code, body)
		}
	}
	ports, err := procnet.ListeningTCPPorts(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 0 {
		t.Fatalf("wharf-agent listens on TCP ports %v", ports)
	}
	// Sanity check of the probe itself: this test process does listen
	// (the test hub), so an empty answer above is not a broken probe.
	if own, err := procnet.ListeningTCPPorts(os.Getpid()); err != nil || len(own) == 0 {
		t.Fatalf("procnet sees no listener in the test process: %v %v", own, err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("wharf-agent exit after SIGTERM: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("wharf-agent ignored SIGTERM")
	}
	if strings.Contains(logs.String(), token) || strings.Contains(logs.String(), "cred-1-of-lab") {
		t.Fatalf("a secret in the agent's output:\n%s", logs.String())
	}
}
