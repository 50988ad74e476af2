package hub

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Issue 24, second outside review, B-D: a tenant created 6,720 Greetings of
// the sample hello provider; its controller answered them in arrival
// order (one FIFO work queue for every workspace), so another tenant's
// Greeting waited ~24 minutes for status.reply. Providers now have
// sdk/fairqueue, where tenants take turns, and hello uses it.

var greetingsGVR = schema.GroupVersionResource{Group: "hello.wharf.dev", Version: "v1alpha1", Resource: "greetings"}

// TestAttackLimitsSDKQueueHello, B-D: the attacker has a backlog of
// Greetings waiting for the hello controller when the victim, of another
// tenant, creates one. The victim's is answered while some of the
// attacker's are still unanswered; on the FIFO queue it was answered after
// every one of them.
//
// The backlog is made deterministic, not raced: the provider process is
// stopped (SIGSTOP) while both tenants create their Greetings, so that on
// SIGCONT the controller finds them all at once, the victim's last. It
// gets them either from its watch (in the order they were written) or, if
// the hub dropped the stalled watch, from a relist (in key order, which
// starts with the logical cluster id): the attacker is the workspace whose
// id sorts first, so in both cases the victim's Greeting comes after the
// whole backlog. The order of the replies is read from their
// resourceVersions afterwards (one etcd, so one revision sequence), not
// from the clock.
//
// hello's queue is bounded here to 50 Greetings per tenant, so most of the
// backlog is dropped from the queue on arrival: every one of them must be
// answered all the same (the queue resyncs the tenant from the informer's
// cache when its turn drains).
func TestAttackLimitsSDKQueueHello(t *testing.T) {
	t.Parallel()
	const backlog, bound = 300, 50
	ctx := context.Background()
	hello := providerBinary(t, "./sdk/examples/hello", "hello")
	helloCfg := filepath.Join(t.TempDir(), "hello.yaml")
	if err := os.WriteFile(helloCfg, fmt.Appendf(nil, "maxQueuedPerTenant: %d\n", bound), 0o600); err != nil {
		t.Fatal(err)
	}
	// No health ping while the provider is stopped: a restart would list
	// anew while the backlog is still being written.
	h := startHub(t, hubOptions{extraArgs: []string{"--provider", "hello=" + hello, "--provider-config", "hello=" + helloCfg,
		"--provider-health-interval", "1h"}})
	ids := map[string]string{}
	for _, ws := range []string{"sdkq-x", "sdkq-y"} {
		ids["root:"+ws] = h.createWorkspace("root", ws)
	}
	attacker, victim := "root:sdkq-x", "root:sdkq-y"
	if ids[victim] < ids[attacker] {
		attacker, victim = victim, attacker
	}
	greeting := func(name, msg string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "hello.wharf.dev/v1alpha1", "kind": "Greeting",
			"metadata": map[string]any{"name": name, "namespace": "default"},
			"spec":     map[string]any{"message": msg}}}
	}
	att := bgClientsFor(t, h, attacker).dyn.Resource(greetingsGVR).Namespace("default")
	vic := bgClientsFor(t, h, victim).dyn.Resource(greetingsGVR).Namespace("default")
	// Both enable hello; a first Greeting each shows the controller runs.
	for ws, c := range map[string]interface {
		Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
	}{attacker: att, victim: vic} {
		h.mustApply(ws, "apiVersion: providers.wharf.dev/v1alpha1\nkind: ProviderBinding\nmetadata:\n  name: hello\nspec:\n  provider: hello\n", "create")
		eventually(t, 90*time.Second, func() error {
			out, err := h.applyStdin(ws, "apiVersion: hello.wharf.dev/v1alpha1\nkind: Greeting\nmetadata:\n  name: first\n  namespace: default\nspec:\n  message: first\n", "apply")
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		})
		eventually(t, 60*time.Second, func() error {
			g, err := c.Get(ctx, "first", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !greetingAnswered(g) {
				return fmt.Errorf("%s: first greeting not answered yet", ws)
			}
			return nil
		})
	}

	t.Run("B-D/a tenant's backlog of greetings does not hold another tenant's greeting", func(t *testing.T) {
		pid := pluginPidOf(t, h, hello)
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		stopped := true
		defer func() {
			if stopped {
				_ = syscall.Kill(pid, syscall.SIGCONT)
			}
		}()
		if err := parallel(backlog, func(i int) error {
			_, err := att.Create(ctx, greeting(fmt.Sprintf("g-%d", i), fmt.Sprintf("flood %d", i)), metav1.CreateOptions{})
			return err
		}); err != nil {
			t.Fatalf("creating the attacker's greetings: %v", err)
		}
		if _, err := vic.Create(ctx, greeting("victor", "victor"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := pluginPidOf(t, h, hello); got != pid {
			t.Fatalf("the hub restarted hello (pid %d, now %d) while its backlog was written", pid, got)
		}
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		stopped = false

		var victorRV int64
		eventually(t, 3*time.Minute, func() error {
			g, err := vic.Get(ctx, "victor", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !greetingAnswered(g) {
				return fmt.Errorf("victor's greeting not answered yet")
			}
			victorRV, err = strconv.ParseInt(g.GetResourceVersion(), 10, 64)
			return err
		})
		// Every greeting is answered in the end, those dropped over the
		// bound too; count those answered after the victim's.
		after := 0
		eventually(t, 5*time.Minute, func() error {
			list, err := att.List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			answered := 0
			after = 0
			for i := range list.Items {
				if list.Items[i].GetName() == "first" || !greetingAnswered(&list.Items[i]) {
					continue
				}
				answered++
				rv, err := strconv.ParseInt(list.Items[i].GetResourceVersion(), 10, 64)
				if err != nil {
					return err
				}
				if rv > victorRV {
					after++
				}
			}
			if answered != backlog {
				return fmt.Errorf("%d of the attacker's %d greetings answered", answered, backlog)
			}
			return nil
		})
		t.Logf("attacker's greetings answered after the victim's: %d of %d", after, backlog)
		if after == 0 {
			t.Errorf("the victim's greeting was answered after all %d of the attacker's: the hello controller took them in arrival order", backlog)
		}
		if !strings.Contains(h.log.String(), "tenant over its bound") {
			t.Errorf("hello's queue never reached its bound of %d (no log line): the row did not test recovery of dropped items", bound)
		}
	})
}

// greetingAnswered reports whether g's status.reply answers its message.
func greetingAnswered(g *unstructured.Unstructured) bool {
	msg, _, _ := unstructured.NestedString(g.Object, "spec", "message")
	reply, _, _ := unstructured.NestedString(g.Object, "status", "reply")
	return reply == "Hello, "+msg
}

// pluginPidOf is the pid of the hub's child running bin; it fails the test
// if none runs.
func pluginPidOf(t *testing.T, h *hubProc, bin string) int {
	t.Helper()
	want, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range childPids(t, h.cmd.Process.Pid) {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == want && processRunning(pid) {
			return pid
		}
	}
	t.Fatalf("no running %s under the hub", bin)
	return 0
}
