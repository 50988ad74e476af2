package login

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// flip changes one character of s in the middle, keeping the alphabet.
func flip(s string) string {
	i := len(s) / 2
	c := byte('A')
	if s[i] == 'A' {
		c = 'B'
	}
	return s[:i] + string(c) + s[i+1:]
}

func TestStateSignature(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	key := testKey(t)
	s, err := newStates(key)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := newStates(testKey(t))
	good := s.sign(statePayload{ID: "abc", Expiry: now.Add(time.Minute).Unix()})
	enc, sig, _ := strings.Cut(good, ".")
	forgedBody := s.sign(statePayload{ID: "evil", Expiry: now.Add(time.Minute).Unix()})
	forgedEnc, _, _ := strings.Cut(forgedBody, ".")
	for _, tc := range []struct {
		name  string
		state string
		by    *states
		at    time.Time
		ok    bool
	}{
		{"valid", good, s, now, true},
		{"valid until expiry", good, s, now.Add(59 * time.Second), true},
		{"expired", good, s, now.Add(time.Minute), false},
		{"wrong key", good, other, now, false},
		{"tampered payload", flip(enc) + "." + sig, s, now, false},
		{"tampered signature", enc + "." + flip(sig), s, now, false},
		{"payload swapped under a valid signature", forgedEnc + "." + sig, s, now, false},
		{"no signature", enc, s, now, false},
		{"empty signature", enc + ".", s, now, false},
		{"empty", "", s, now, false},
		{"garbage", "!!.??", s, now, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.by.verify(tc.state, tc.at)
			if (err == nil) != tc.ok {
				t.Fatalf("verify = %+v, %v; want ok=%v", p, err, tc.ok)
			}
			if tc.ok && p.ID != "abc" {
				t.Fatalf("id = %q", p.ID)
			}
		})
	}
}

func TestLoginCookieBinding(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s, _ := newStates(testKey(t))
	other, _ := newStates(testKey(t))
	st := statePayload{ID: "attempt-1", Expiry: now.Add(time.Minute).Unix()}
	a := attempt{StateID: "attempt-1", Verifier: "v", Nonce: "n", Then: "/", Expiry: st.Expiry}
	c, err := s.sealAttempt(a)
	if err != nil {
		t.Fatal(err)
	}
	otherAttempt, _ := s.sealAttempt(attempt{StateID: "attempt-2", Verifier: "v", Expiry: st.Expiry})
	// A value sealed as a session cannot pass as a pre-login cookie.
	sess, _ := newSessions(testKey(t))
	asSession, _ := sess.seal(Session{ID: "attempt-1", User: "u", CSRF: "c", Expiry: st.Expiry})
	for _, tc := range []struct {
		name   string
		cookie string
		by     *states
		at     time.Time
		ok     bool
	}{
		{"own cookie", c, s, now, true},
		{"another attempt's cookie (other tab, other browser)", otherAttempt, s, now, false},
		{"tampered", flip(c), s, now, false},
		{"wrong key", c, other, now, false},
		{"expired", c, s, now.Add(time.Minute), false},
		{"session cookie value", asSession, s, now, false},
		{"empty", "", s, now, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.by.openAttempt(tc.cookie, st, tc.at)
			if (err == nil) != tc.ok {
				t.Fatalf("openAttempt = %+v, %v; want ok=%v", got, err, tc.ok)
			}
			// The verifier never goes into the cookie.
			want := a
			want.Verifier = ""
			if tc.ok && got != want {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
}

// TestStateSingleUse: a state id is consumed once, even by concurrent
// callbacks (as on several replicas), in a real etcd.
func TestStateSingleUse(t *testing.T) {
	db, err := newStore(testEtcd(t), "/registry", testKey(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	until := time.Now().Add(time.Minute)
	const n = 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fresh, err := db.consumeState(ctx, "s-1", until)
			if err != nil {
				t.Error(err)
			}
			if fresh {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d of %d concurrent uses succeeded, want exactly 1", wins, n)
	}
	if fresh, err := db.consumeState(ctx, "s-1", until); err != nil || fresh {
		t.Fatalf("replay: fresh=%v err=%v", fresh, err)
	}
	if fresh, err := db.consumeState(ctx, "s-2", until); err != nil || !fresh {
		t.Fatalf("another state: fresh=%v err=%v", fresh, err)
	}
}

// TestVerifier: the PKCE verifier is recomputable by any replica (same
// key), unique per attempt, unguessable without the key, and a valid
// RFC 7636 verifier.
func TestVerifier(t *testing.T) {
	key := testKey(t)
	a, _ := newStates(key)
	b, _ := newStates(key)
	other, _ := newStates(testKey(t))
	v := a.verifier("attempt-1")
	if v != b.verifier("attempt-1") {
		t.Fatal("two replicas with one key derive different verifiers")
	}
	if v == a.verifier("attempt-2") || v == other.verifier("attempt-1") {
		t.Fatal("verifier does not depend on both attempt and key")
	}
	if len(v) < 43 || len(v) > 128 || strings.Trim(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~") != "" {
		t.Fatalf("verifier %q is not an RFC 7636 code verifier", v)
	}
}
