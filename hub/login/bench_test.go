package login

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/utils/clock"
)

// BenchmarkSessionAuthenticate is the per-request cost of a session
// cookie: opening the AES-GCM cookie, then the etcd read that makes
// logout effective on every replica (a real embedded etcd on loopback).
func BenchmarkSessionAuthenticate(b *testing.B) {
	c := testEtcdB(b)
	key, _ := GenerateKey()
	se, _ := newSessions(key)
	db, _ := newStore(c, "/registry", key)
	a := &SessionAuthenticator{sessions: se, store: db, clock: clock.RealClock{}}
	s := Session{ID: "bench", User: "ada@example.com", Groups: []string{"dev", "ops"}, CSRF: "c",
		Expiry: time.Now().Add(time.Hour).Unix(), Revalidate: time.Now().Add(time.Hour).Unix()}
	v, _ := se.seal(s)
	if err := db.createSession(context.Background(), s.ID, record{}, time.Now().Add(time.Hour)); err != nil {
		b.Fatal(err)
	}
	b.Run("cookie-open-only", func(b *testing.B) {
		for b.Loop() {
			if _, err := se.open(v, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cookie+etcd", func(b *testing.B) {
		r := httptest.NewRequest(http.MethodGet, "/api", nil)
		r.AddCookie(&http.Cookie{Name: SessionCookie, Value: v})
		for b.Loop() {
			if _, ok, err := a.AuthenticateRequest(r); !ok {
				b.Fatal(err)
			}
		}
	})
}
