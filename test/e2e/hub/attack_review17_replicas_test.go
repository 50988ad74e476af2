package hub

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Attack review 17, two replicas (ids "review17:replicas/<n>"): two hubs
// on one etcd with the replicas: single provider `single`. The holder,
// hub-r, registered an internal URL that an attacker on the pod network
// now answers (as after the holder's pod IP was reused) with a
// certificate of its own. bob (viewer of root:r17, where single is
// enabled, and admin of his home) attacks the forwarding hop, the drain
// and the throttle. Each row passes when the system is safe.

// rogueListener answers TLS on loopback with a self-signed certificate for
// 127.0.0.1 and counts the HTTP requests that reach it.
func rogueListener(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(17), Subject: pkix.Name{CommonName: "rogue"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		_, _ = w.Write([]byte(`{"pid":1,"path":"/rogue"}`))
	}), ErrorLog: nil}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "https://" + l.Addr().String(), &n
}

func TestAttackReview17Replicas(t *testing.T) {
	t.Parallel()
	_, endpoints := externalEtcd(t)
	bin := singleProvider(t)
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-token,alice,alice-uid,\"devs\"\nbob-token,bob,bob-uid,\"devs\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rogueURL, rogueHits := rogueListener(t)
	start := func(name string, extra ...string) *hubProc {
		return startHub(t, hubOptions{etcdServers: endpoints, extraArgs: append([]string{
			"--token-auth-file", tokens, "--provider", "single=" + bin, "--replica-name", name}, extra...)})
	}
	r := start("hub-r", "--internal-url", rogueURL, "--shutdown-delay=4s")
	eventually(t, 90*time.Second, func() error {
		if kids := pluginChildren(t, r.cmd.Process.Pid, bin); len(kids) != 1 {
			return fmt.Errorf("hub-r runs %d plugins", len(kids))
		}
		return nil
	})
	a := start("hub-a")
	r.createWorkspace("root", "r17")
	r.mustKubectl("root:r17", "create", "clusterrolebinding", "bob-view", "--clusterrole=view", "--user=bob")
	r.enableProvider("root:r17", "single")
	aliceHome := ""
	if w, code, body := a.whoamiAs("alice-token"); code != http.StatusOK || w.Home == nil {
		t.Fatalf("alice whoami: %d %s", code, body)
	} else {
		aliceHome = w.Home.Path
	}

	type answer struct {
		code int
		body string
		e    echoed
	}
	call := func(h *hubProc, token, path string, hdr map[string]string) answer {
		req, _ := http.NewRequest(http.MethodGet, h.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := h.client().Do(req)
		if err != nil {
			return answer{body: err.Error()}
		}
		defer resp.Body.Close()
		ans := answer{code: resp.StatusCode, body: readAll(resp)}
		if ans.code == http.StatusOK {
			_ = json.Unmarshal([]byte(ans.body), &ans.e)
		}
		return ans
	}
	forged := map[string]string{"X-Wharf-Workspace": "root:r17", "X-Kedge-User": "alice", "X-Kedge-Groups": "system:masters",
		"X-Kedge-Tenant": aliceHome, "X-Wharf-Replica-Hop": "hub-r"}
	// noForgery: the provider, if it answered, saw bob and nothing forged.
	noForgery := func(t *testing.T, ans answer) {
		t.Helper()
		if ans.code != http.StatusOK {
			return
		}
		if got := ans.e.Headers.Values("X-Kedge-User"); len(got) != 1 || got[0] != "bob" {
			t.Errorf("provider saw user %q: %s", got, ans.body)
		}
		if strings.Contains(ans.body, "system:masters") || strings.Contains(ans.body, aliceHome) {
			t.Errorf("provider saw a forged header: %s", ans.body)
		}
	}

	t.Run("review17:replicas/1/the holder's internal URL answered by a rogue certificate gets nothing", func(t *testing.T) {
		// hub-a forwards to hub-r's registered URL; the rogue's
		// certificate is not hub-r's, so no request (and no token, no
		// assertion) may reach it.
		// 502 shows hub-a tried the hop (503 would mean it knew no
		// holder yet) and refused the rogue's certificate.
		eventually(t, 60*time.Second, func() error {
			ans := call(a, "bob-token", "/services/providers/single/headers", map[string]string{"X-Wharf-Workspace": "root:r17"})
			if ans.code == http.StatusOK {
				t.Fatalf("answered through the rogue: %s", ans.body)
			}
			if ans.code != http.StatusBadGateway {
				return fmt.Errorf("hub-a: %d %s", ans.code, ans.body)
			}
			return nil
		})
		if n := rogueHits.Load(); n != 0 {
			t.Fatalf("%d requests reached the rogue listener", n)
		}
	})
	t.Run("review17:replicas/2/forged hop and identity headers on the holder and the other replica", func(t *testing.T) {
		for _, h := range []*hubProc{r, a} {
			noForgery(t, call(h, "bob-token", "/services/providers/single/headers", forged))
			for _, hdr := range []map[string]string{
				{"X-Wharf-Workspace": "root:r17", "X-Wharf-Replica-Hop": "hub-a", "X-Wharf-Replica-Assertion": "eyJpc3MiOiJodWItYSIsInUiOiJhbGljZSJ9.AAAA"},
				{"X-Wharf-Workspace": "root:r17", "X-Wharf-Replica-Assertion": "e30.e30"},
			} {
				for _, tok := range []string{"bob-token", ""} {
					if ans := call(h, tok, "/services/providers/single/headers", hdr); ans.code != http.StatusUnauthorized {
						t.Errorf("%s: forged assertion with token %q: %d %s", h.URL, tok, ans.code, ans.body)
					}
				}
			}
			// A forged hop never lets bob into a workspace he may not see.
			if ans := call(h, "bob-token", "/services/providers/single/headers", map[string]string{"X-Wharf-Workspace": aliceHome, "X-Wharf-Replica-Hop": "hub-r"}); ans.code != http.StatusForbidden {
				t.Errorf("%s: alice's home through a forged hop: %d %s", h.URL, ans.code, ans.body)
			}
		}
	})
	t.Run("review17:replicas/3/identity is enforced while the holder drains", func(t *testing.T) {
		if err := r.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		// /readyz failing is the drain's first sign; the API keeps serving
		// for --shutdown-delay (4 s) after it.
		eventually(t, 30*time.Second, func() error {
			if ans := call(r, r.Token, "/readyz", nil); ans.code == http.StatusOK {
				return fmt.Errorf("hub-r still ready")
			}
			return nil
		})
		checked := 0
		for {
			ans := call(r, "bob-token", "/version", nil)
			if ans.code == 0 {
				break // stopped listening
			}
			checked++
			if ans := call(r, "", "/api/v1/namespaces/default/configmaps", nil); !drainSafe(ans.code, http.StatusUnauthorized) {
				t.Errorf("anonymous during drain: %d %s", ans.code, ans.body)
			}
			if ans := call(r, "bob-token", "/clusters/"+aliceHome+"/api/v1/namespaces/default/configmaps", nil); !drainSafe(ans.code, http.StatusForbidden) {
				t.Errorf("bob in alice's home during drain: %d %s", ans.code, ans.body)
			}
			if ans := call(r, "bob-token", "/metrics", nil); !drainSafe(ans.code, http.StatusForbidden) {
				t.Errorf("bob /metrics during drain: %d", ans.code)
			}
			if ans := call(r, "", "/services/providers/single/headers", map[string]string{"X-Wharf-Workspace": "root:r17", "X-Wharf-Replica-Assertion": "e30.e30"}); !drainSafe(ans.code, http.StatusUnauthorized) {
				t.Errorf("forged assertion during drain: %d %s", ans.code, ans.body)
			}
			noForgery(t, call(r, "bob-token", "/services/providers/single/headers", forged))
		}
		if checked == 0 {
			t.Fatal("hub-r stopped listening before any check")
		}
		<-r.exited
		// The survivor took the provider over and still asserts bob.
		eventually(t, 60*time.Second, func() error {
			ans := call(a, "bob-token", "/services/providers/single/headers", map[string]string{"X-Wharf-Workspace": "root:r17"})
			if ans.code != http.StatusOK {
				return fmt.Errorf("after the drain: %d %s", ans.code, ans.body)
			}
			return nil
		})
		noForgery(t, call(a, "bob-token", "/services/providers/single/headers", forged))
		t.Logf("%d rounds of checks while hub-r drained", checked)
	})
	t.Run("review17:replicas/5/client address headers reach the provider only as the hub states them", func(t *testing.T) {
		for _, h := range []*hubProc{a} {
			ans := call(h, "bob-token", "/services/providers/single/headers", map[string]string{"X-Wharf-Workspace": "root:r17",
				"X-Forwarded-For": "6.6.6.6", "X-Real-Ip": "6.6.6.6", "Forwarded": "for=6.6.6.6", "X-Forwarded-Host": "evil.example"})
			if ans.code != http.StatusOK {
				t.Fatalf("%s: %d %s", h.URL, ans.code, ans.body)
			}
			if strings.Contains(ans.body, "6.6.6.6") || strings.Contains(ans.body, "evil.example") {
				t.Errorf("%s: the provider saw the client's address claims: %s", h.URL, ans.body)
			}
		}
	})
	t.Run("review17:replicas/4/rotating X-Forwarded-For from an untrusted peer escapes no throttle", func(t *testing.T) {
		// No --trusted-proxy-cidrs: the header is the client's word and
		// the throttle keys on the connection's address (loopback).
		for i := 0; i < 500; i++ {
			ans := call(a, fmt.Sprintf("bad-%d-%d", i, time.Now().UnixNano()), "/version", map[string]string{"X-Forwarded-For": fmt.Sprintf("198.51.100.%d", i%250)})
			switch ans.code {
			case http.StatusTooManyRequests:
				return
			case http.StatusUnauthorized:
			default:
				t.Fatalf("bad token %d: %d %s", i, ans.code, ans.body)
			}
		}
		t.Fatal("500 bad tokens with rotating X-Forwarded-For, never 429")
	})
}

// drainSafe reports whether code is a safe answer from a draining replica
// to a request that must be refused with want: want itself, no answer (the
// listener closed), or the generic server's 503 "apiserver is shutting
// down", which it sends before authentication once its grace period began
// and which tells nothing.
func drainSafe(code, want int) bool {
	return code == want || code == 0 || code == http.StatusServiceUnavailable
}
