package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhub/wharf/test/kube"
	"github.com/wharfhub/wharf/test/testutil"
)

// The end-to-end tests of the edge commands run the real binaries from
// $WHARF_BIN_DIR or <repo>/bin (`make build`): wharf-hub with the edges
// provider plugin, wharf, wharf-agent, and the fixture's kubectl. The
// process helpers (testutil.StartHub, Run, Eventually, Binary) are the
// shared ones, so this package grows no copy of its own.

const aliceHubToken = "alice-cli-edge-token"

// e2eHub is a running wharf-hub with the edges provider.
type e2eHub struct {
	*testutil.Hub
}

func startE2EHub(t *testing.T) *e2eHub {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(aliceHubToken+",alice,alice-uid,\"devs\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &e2eHub{testutil.StartHub(t, testutil.HubOptions{Args: []string{"--shutdown-delay=0",
		"--token-auth-file", tokens, "--provider", "edges=" + testutil.Binary(t, "wharf-provider-edges")}})}
}

// kubectl runs the fixture's kubectl as the hub admin in workspace ws.
func (h *e2eHub) kubectl(t *testing.T, ws string, stdin string, args ...string) string {
	t.Helper()
	out, errOut, code := testutil.Run(t, nil, stdin, kube.KubectlPath(t),
		append([]string{"--kubeconfig", h.AdminKubeconfig, "--server", h.URL + "/clusters/" + ws}, args...)...)
	if code != 0 {
		t.Fatalf("kubectl %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}
