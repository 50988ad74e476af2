package hub

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAggregationAvailable: the hub keeps the APIService's Available
// condition with kube-aggregator's reasons as the provider fails its
// discovery check, stops answering (SIGSTOP: the process is there but
// dead to the world; health pings are slowed so the supervisor does not
// restart it meanwhile), is disabled in the workspace, and recovers from
// each; a disabled provider's group answers 503.
func TestAggregationAvailable(t *testing.T) {
	t.Parallel()
	h := aggHub(t, hubOptions{extraArgs: []string{"--provider-health-interval", "1h"}}, "aggprobe")
	h.createWorkspace("root", "a")
	h.enableProvider("root:a", "aggprobe")
	h.registerProbe("root:a", "aggprobe", false)
	want := func(status, reason string) {
		t.Helper()
		eventually(t, 120*time.Second, func() error {
			st, r, err := h.apiServiceCondition("root:a")
			if err != nil || st != status || r != reason {
				return fmt.Errorf("available %q %q %v, want %s %s", st, r, err, status, reason)
			}
			return nil
		})
	}
	want("True", "Passed")

	// Discovery answers 503.
	if code, body := h.backendAs(h.Token, http.MethodPost, "root:a", "aggprobe", "/fail"); code != http.StatusOK {
		t.Fatalf("fail: %d %s", code, body)
	}
	want("False", "FailedDiscoveryCheck")
	msg := h.mustKubectl("root:a", "get", "apiservice", "v1.probe.example.com", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].message}`)
	if msg != "failing or missing response from provider aggprobe: bad status from /apis/probe.example.com/v1: 503" {
		t.Errorf("message %q", msg)
	}
	if out := h.mustKubectl("root:a", "get", "apiservices"); !strings.Contains(out, "False (FailedDiscoveryCheck)") {
		t.Errorf("kubectl get apiservices:\n%s", out)
	}
	if code, body := h.backendAs(h.Token, http.MethodPost, "root:a", "aggprobe", "/recover"); code != http.StatusOK {
		t.Fatalf("recover: %d %s", code, body)
	}
	want("True", "Passed")

	// The provider process stops answering.
	kids := pluginChildren(t, h.cmd.Process.Pid, aggProbe(t, "aggprobe"))
	if len(kids) != 1 {
		t.Fatalf("plugin processes: %v", kids)
	}
	if err := syscall.Kill(kids[0], syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			_ = syscall.Kill(kids[0], syscall.SIGCONT)
		}
	}()
	want("False", "FailedDiscoveryCheck")
	if err := syscall.Kill(kids[0], syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	want("True", "Passed")

	// Disabled in the workspace: ServiceNotFound, and 503 for requests.
	h.mustKubectl("root:a", "delete", "providerbinding", "aggprobe")
	want("False", "ServiceNotFound")
	eventually(t, 60*time.Second, func() error {
		code, body, _ := h.reqAs(h.Token, http.MethodGet, "/clusters/root:a/apis/probe.example.com/v1/probes", nil, "")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, `"reason":"ServiceUnavailable"`) {
			return fmt.Errorf("disabled: %d %s", code, body)
		}
		return nil
	})
	h.enableProvider("root:a", "aggprobe")
	want("True", "Passed")
}
