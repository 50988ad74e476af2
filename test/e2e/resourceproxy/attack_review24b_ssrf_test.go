package resourceproxy

import (
	"fmt"
	"strings"
	"testing"
)

// Row r24b:16 of issue 24's second outside attack review
// (docs/reviews/issue-24-review-2.md, "Rows"): the reviewer aimed
// ResourceProxies at the hub host in 19 spellings of an address (its
// rp_ssrf.sh) with a canary listener; none was reached. r24:18
// (attack_ssrf_test.go) has the plain forms, 127.0.0.1 and localhost; this
// row has other spellings of the hub host, each aimed at a listening
// port: none may be dialled, and every request through them fails.
func TestReview24bSSRF(t *testing.T) {
	open := listenCounting(t, "127.0.0.1:0")
	p := open.port()
	forms := []struct{ name, server string }{
		{"short", "https://127.1:" + p},
		{"zero", "https://0.0.0.0:" + p},
		{"zeroshort", "https://0:" + p},
		{"other127", "https://127.45.6.7:" + p},
		{"mapped", "https://[::ffff:127.0.0.1]:" + p},
		{"mappedhex", "https://[::ffff:7f00:1]:" + p},
		{"compat", "https://[::127.0.0.1]:" + p},
		{"v6loop", "https://[::1]:" + p},
		{"v6zero", "https://[::]:" + p},
		{"decimal", "https://2130706433:" + p},
		{"hex", "https://0x7f000001:" + p},
		{"octal", "https://0177.0.0.1:" + p},
		{"dotted", "https://localhost.:" + p},
		{"upper", "https://LOCALHOST:" + p},
		{"sub", "https://x.localhost:" + p},
		{"meta", "https://169.254.169.254:" + p},
	}
	h := startHub(t)
	ws := malloryWorkspace(h)
	for _, f := range forms {
		aimProxy(h, ws, "f"+f.name, ssrfKubeconfig(t, f.server, "", nil))
	}
	for _, f := range forms {
		name := "f" + f.name
		eventually(t, "r24b:16 "+f.server+": the provider judged the target", func() error {
			if reason := reasonOf(readyOf(h, ws, name)); reason == "" || reason == "SecretForbidden" {
				return fmt.Errorf("no verdict yet: %q", readyOf(h, ws, name))
			}
			return nil
		})
		cond := readyOf(h, ws, name)
		code, _, body := h.raw("/clusters/" + ws + "/apis/" + name + ".example.com/v1/namespaces/default/things")
		t.Logf("r24b:16 %s: condition %q; list answers %d %.200s", f.server, cond, code, body)
		// A spelling that resolves to the host is refused by the target
		// policy (Ready=False TargetAddressRefused); one that Go's
		// resolver does not read as an address (127.1, 2130706433,
		// 0x7f000001, ...) names no host: Ready, but unavailable.
		refused := strings.HasPrefix(cond, "False|TargetAddressRefused|")
		unavailable := code == 503 && strings.Contains(body, "is unavailable")
		if !refused && !unavailable {
			t.Errorf("r24b:16 %s: Ready %q, list %d %.200s: want refused by the target policy or unavailable", f.server, cond, code, body)
		}
	}
	if n := open.accepted.Load(); n != 0 {
		t.Errorf("r24b:16: the provider dialled the hub host's open port %d times", n)
	}
}
