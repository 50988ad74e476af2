package login

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/idp"
)

var ada = idp.User{Username: "ada", Password: "lovelace", Email: "ada@example.com", Groups: []string{"dev"}}

func startIdP(t *testing.T, device bool) (*idp.IdP, OIDC) {
	t.Helper()
	p := idp.StartWith(t, idp.Options{
		Clients:    []idp.Client{{ID: "cli", RedirectURIs: []string{"http://127.0.0.1/callback"}}},
		Users:      []idp.User{ada},
		DeviceFlow: device,
	})
	hc, err := HTTPClient(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	return p, OIDC{Issuer: p.URL, ClientID: "cli", HTTP: hc}
}

// browser logs in as user at the URL it is given and follows every
// redirect, to the loopback listener in the end.
func browser(t *testing.T, p *idp.IdP, user, pass string) func(string) error {
	pem, err := os.ReadFile(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return func(u string) error {
		go func() { // a browser does not block the CLI
			resp, err := c.Get(u)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			resp, err = idp.SubmitLogin(context.Background(), c, resp.Request.URL.String(), user, pass)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		}()
		return nil
	}
}

func TestLoopbackAndRefresh(t *testing.T) {
	p, o := startIdP(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	e, err := o.Loopback(ctx, &out, browser(t, p, ada.Username, ada.Password))
	if err != nil {
		t.Fatalf("Loopback: %v\n%s", err, out.String())
	}
	if e.IDToken == "" || e.RefreshToken == "" || !e.Expiry.After(time.Now()) {
		t.Fatalf("login left %+v", e.Expiry)
	}
	if !strings.HasPrefix(out.String(), AuthURLPrefix+p.URL+"/authorize?") || strings.Contains(out.String(), e.IDToken) {
		t.Errorf("output %q: want the authorization URL and no token", out.String())
	}
	n, err := o.Refresh(ctx, e)
	if err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	if n.IDToken == e.IDToken || n.RefreshToken == e.RefreshToken {
		t.Error("refresh returned the old tokens")
	}
	// The old refresh token was rotated away.
	if _, err := o.Refresh(ctx, e); err == nil {
		t.Error("a spent refresh token refreshed again")
	}
	if _, err := o.Refresh(ctx, n); err != nil {
		t.Errorf("the rotated refresh token: %v", err)
	}
}

func TestLoopbackWrongPasswordTimesOut(t *testing.T) {
	p, o := startIdP(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := o.Loopback(ctx, &bytes.Buffer{}, browser(t, p, ada.Username, "wrong")); err == nil {
		t.Fatal("logged in with a wrong password")
	}
}

func TestDevice(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Run("unsupported", func(t *testing.T) {
		_, o := startIdP(t, false)
		if _, err := o.Device(ctx, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "device") {
			t.Fatalf("device flow against an IdP without it: %v", err)
		}
	})
	t.Run("approved", func(t *testing.T) {
		p, o := startIdP(t, true)
		r, w, _ := os.Pipe()
		defer r.Close()
		go func() {
			defer w.Close()
			buf := make([]byte, 4096)
			var seen string
			for !strings.Contains(seen, "\n"+DeviceCodePrefix) || !strings.HasSuffix(seen, "\n") {
				n, err := r.Read(buf)
				if err != nil {
					return
				}
				seen += string(buf[:n])
			}
			_, rest, _ := strings.Cut(seen, DeviceCodePrefix)
			code, _, _ := strings.Cut(rest, "\n")
			if err := p.ApproveDevice(ctx, code, ada.Username); err != nil {
				t.Error(err)
			}
		}()
		e, err := o.Device(ctx, w)
		if err != nil || e.IDToken == "" || e.RefreshToken == "" {
			t.Fatalf("Device: %v", err)
		}
	})
}

func TestCallbackHandler(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		status      int
		ok          bool
	}{
		{"good", "code=c&state=s1", http.StatusOK, true},
		{"wrong state", "code=c&state=s2", http.StatusBadRequest, false},
		{"no state", "code=c", http.StatusBadRequest, false},
		{"idp error", "error=access_denied&state=s1", http.StatusForbidden, false},
		{"no code", "state=s1", http.StatusBadRequest, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			results := make(chan callbackResult, 1)
			rec := httptest.NewRecorder()
			callbackHandler("s1", results).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, CallbackPath+"?"+tc.query, nil))
			res := <-results
			if rec.Code != tc.status || (res.err == nil) != tc.ok || (res.code == "c") != tc.ok {
				t.Errorf("%s: %d %v %q", tc.query, rec.Code, res.err, res.code)
			}
		})
	}
}
