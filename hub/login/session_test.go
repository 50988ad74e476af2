package login

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"
)

func TestSessionSealOpen(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	key := testKey(t)
	x, _ := newSessions(key)
	other, _ := newSessions(testKey(t))
	// Same secret, other purpose: the pre-login cookie sealer.
	states, _ := newStates(key)
	s := Session{ID: "sid", User: "ada@example.com", Groups: []string{"dev"}, CSRF: "csrf", Expiry: now.Add(time.Hour).Unix(), Revalidate: now.Add(time.Minute).Unix()}
	v, err := x.seal(s)
	if err != nil {
		t.Fatal(err)
	}
	v2, _ := x.seal(s)
	if v == v2 {
		t.Error("two seals of one session are equal: nonce reused")
	}
	crossPurpose, _ := states.cookie.seal([]byte(`{"sid":"sid","user":"mallory","csrf":"c","exp":9999999999}`), []byte(SessionCookie))
	noUser, _ := x.seal(Session{ID: "sid", CSRF: "c", Expiry: s.Expiry})
	for _, tc := range []struct {
		name  string
		value string
		by    *sessions
		at    time.Time
		ok    bool
	}{
		{"valid", v, x, now, true},
		{"valid past revalidation (refresh decides)", v, x, now.Add(2 * time.Minute), true},
		{"expired", v, x, now.Add(time.Hour), false},
		{"tampered", flip(v), x, now, false},
		{"truncated", v[:len(v)-4], x, now, false},
		{"wrong key", v, other, now, false},
		{"same secret, other purpose", crossPurpose, x, now, false},
		{"no user", noUser, x, now, false},
		{"empty", "", x, now, false},
		{"garbage", "not base64!", x, now, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.by.open(tc.value, tc.at)
			if (err == nil) != tc.ok {
				t.Fatalf("open = %+v, %v; want ok=%v", got, err, tc.ok)
			}
			if tc.ok && (got.User != s.User || got.ID != s.ID || got.CSRF != s.CSRF || len(got.Groups) != 1) {
				t.Fatalf("got %+v", got)
			}
		})
	}
}

// TestSessionTooLarge: a session a browser would silently drop is an
// error at login, not a mysterious logout.
func TestSessionTooLarge(t *testing.T) {
	x, _ := newSessions(testKey(t))
	groups := make([]string, 200)
	for i := range groups {
		groups[i] = fmt.Sprintf("a-rather-long-group-name-%03d", i)
	}
	if _, err := x.seal(Session{ID: "sid", User: "u", CSRF: "c", Groups: groups, Expiry: time.Now().Add(time.Hour).Unix()}); err == nil {
		t.Fatal("sealed a session too large for a cookie")
	}
}

// TestBearerIgnoresCookie: a request with Authorization is never a
// cookie request, whatever its cookie.
func TestBearerIgnoresCookie(t *testing.T) {
	x, _ := newSessions(testKey(t))
	v, _ := x.seal(Session{ID: "sid", User: "u", CSRF: "c", Expiry: time.Now().Add(time.Hour).Unix()})
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Cookie", SessionCookie+"="+v)
	if _, ok, err := x.fromRequest(r, time.Now()); !ok || err != nil {
		t.Fatalf("cookie request: ok=%v err=%v", ok, err)
	}
	r.Header.Set("Authorization", "Bearer garbage")
	if _, ok, _ := x.fromRequest(r, time.Now()); ok {
		t.Fatal("bearer request treated as a cookie request")
	}
}
