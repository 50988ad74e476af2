package revdial

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestClientConnectHookAndHandshakeError: the 101 answer's headers reach
// OnConnect before the tunnel serves; a refused handshake surfaces as a
// *HandshakeError with its status, and RetryDelay sees it.
func TestClientConnectHookAndHandshakeError(t *testing.T) {
	noLeaks(t)
	opts := fastOptions()
	srvTLS, cliTLS := testTLS(t)
	srv := NewServer("/pickup", opts)
	t.Cleanup(func() { srv.Close() })
	mux := http.NewServeMux()
	mux.HandleFunc("/control", func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "Bearer old":
			_, _ = srv.UpgradeWithHeader(w, r, "a", http.Header{"X-Rotated": {"new"}})
		case "Bearer new":
			_, _ = srv.Upgrade(w, r, "a")
		default:
			http.Error(w, "no", http.StatusUnauthorized)
		}
	})
	mux.HandleFunc("/pickup/", func(w http.ResponseWriter, r *http.Request) {
		// Pickups get Header, never the control credential.
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Pickup") != "1" {
			http.Error(w, "pickup carried the control headers", http.StatusBadRequest)
			return
		}
		srv.ServeHTTP(w, r)
	})
	hs := httptest.NewUnstartedServer(mux)
	hs.TLS = srvTLS
	hs.StartTLS()
	t.Cleanup(hs.Close)

	var mu sync.Mutex
	cred := "old"
	var seen []string
	var retryErrs []error
	cl, err := NewClient(ClientConfig{
		URL: "wss://" + hs.Listener.Addr().String() + "/control",
		Header: func(context.Context) (http.Header, error) {
			return http.Header{"X-Pickup": {"1"}}, nil
		},
		ControlHeader: func(context.Context) (http.Header, error) {
			mu.Lock()
			defer mu.Unlock()
			return http.Header{"Authorization": {"Bearer " + cred}}, nil
		},
		TLSConfig: cliTLS,
		Options:   opts,
		Backoff:   Backoff{Base: time.Millisecond, Max: 5 * time.Millisecond},
		OnConnect: func(resp *http.Response) error {
			mu.Lock()
			defer mu.Unlock()
			if resp.StatusCode != http.StatusSwitchingProtocols {
				return errors.New("not a 101")
			}
			seen = append(seen, resp.Header.Get("X-Rotated"))
			if v := resp.Header.Get("X-Rotated"); v != "" {
				cred = v
				return errors.New("rotated: reconnect")
			}
			cred = "revoked"
			return nil
		},
		RetryDelay: func(err error, _ int) (time.Duration, bool) {
			mu.Lock()
			defer mu.Unlock()
			retryErrs = append(retryErrs, err)
			return time.Millisecond, true
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cl.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	// The hook refused the first (rotating) tunnel and accepted the
	// second; the server then drops whatever tunnel it holds until the
	// agent reconnects with the revoked credential and gets 401.
	serve(t, cl, echo)
	dialed := false
	eventually(t, "a 401 reaching RetryDelay", func() bool {
		if d, ok := srv.Dialer("a"); ok {
			if !dialed {
				// A pickup through the accepted tunnel, with Header only.
				dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
				c, err := d.Dial(dctx)
				dcancel()
				if err == nil {
					got, err := roundTrip(c, "hi")
					c.Close()
					dialed = err == nil && got == "hi"
				}
				if !dialed {
					return false
				}
			}
			d.Close()
		}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range retryErrs {
			var he *HandshakeError
			if errors.As(e, &he) && he.StatusCode == http.StatusUnauthorized {
				return true
			}
		}
		return false
	})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 2 || seen[0] != "new" || seen[1] != "" {
		t.Fatalf("OnConnect saw rotated headers %q, want [new, \"\"]", seen)
	}
	var he *HandshakeError
	if errors.As(retryErrs[0], &he) {
		t.Fatalf("first retry error %v is a handshake error; want the hook's refusal", retryErrs[0])
	}
	if he != nil {
		t.Fatalf("first retry error %v is a handshake error; want the hook's refusal", retryErrs[0])
	}
}
