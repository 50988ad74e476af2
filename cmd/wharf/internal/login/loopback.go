package login

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"golang.org/x/oauth2"

	"github.com/wharfhub/wharf/cmd/wharf/internal/tokencache"
)

// CallbackPath is where the loopback listener receives the code.
const CallbackPath = "/callback"

// AuthURLPrefix starts the line Loopback prints the authorization URL on.
const AuthURLPrefix = "Open this URL in your browser to log in: "

// Loopback runs the authorization code flow with PKCE (S256) through a
// redirect to 127.0.0.1 on a random port. It prints the URL to out and
// calls open (which may be nil) to launch a browser.
func (o OIDC) Loopback(ctx context.Context, out io.Writer, open func(string) error) (tokencache.Entry, error) {
	c, err := o.client(ctx)
	if err != nil {
		return tokencache.Entry{}, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return tokencache.Entry{}, fmt.Errorf("listening on loopback: %w", err)
	}
	defer l.Close()
	conf := c.conf
	conf.RedirectURL = fmt.Sprintf("http://%s%s", l.Addr(), CallbackPath)
	state, nonce, verifier := random(), random(), oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("nonce", nonce))

	codes := make(chan callbackResult, 1)
	srv := &http.Server{Handler: callbackHandler(state, codes), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	fmt.Fprintln(out, AuthURLPrefix+authURL)
	if open != nil {
		if err := open(authURL); err != nil {
			fmt.Fprintf(out, "Could not open a browser (%v); open the URL yourself.\n", err)
		}
	}
	var res callbackResult
	select {
	case res = <-codes:
	case <-ctx.Done():
		return tokencache.Entry{}, fmt.Errorf("waiting for the browser login: %w", ctx.Err())
	}
	if res.err != nil {
		return tokencache.Entry{}, res.err
	}
	tok, err := conf.Exchange(o.ctx(ctx), res.code, oauth2.VerifierOption(verifier))
	if err != nil {
		return tokencache.Entry{}, fmt.Errorf("exchanging the authorization code: %w", redact(err))
	}
	return o.entry(ctx, c, tok, nonce)
}

type callbackResult struct {
	code string
	err  error
}

// callbackHandler delivers the first callback's outcome to results. A
// wrong state aborts the login: the redirect was not caused by this
// login's request.
func callbackHandler(state string, results chan<- callbackResult) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(CallbackPath, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var res callbackResult
		switch {
		case subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1:
			res.err = errors.New("login callback with a wrong state; refusing it")
			http.Error(w, "state mismatch: this login was not started here", http.StatusBadRequest)
		case q.Get("error") != "":
			res.err = fmt.Errorf("the IdP refused the login: %s", q.Get("error"))
			http.Error(w, "login failed: "+q.Get("error"), http.StatusForbidden)
		case q.Get("code") == "":
			res.err = errors.New("login callback without a code")
			http.Error(w, "no code", http.StatusBadRequest)
		default:
			res.code = q.Get("code")
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintln(w, "Logged in to Wharf. You can close this window.")
		}
		select {
		case results <- res:
		default: // a later callback; the first one decided
		}
	})
	return mux
}

func random() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails
	return base64.RawURLEncoding.EncodeToString(b)
}
