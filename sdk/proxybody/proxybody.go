package proxybody

import (
	"context"
	"io"
	"net/http"
)

type key struct{}

// Handler lets Transport release the body of every HTTP/2 request it
// serves: wrap the ReverseProxy (or whatever calls Transport) with it.
// Other requests pass unchanged.
func Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && r.Body != nil && r.Body != http.NoBody {
			r = r.WithContext(context.WithValue(r.Context(), key{}, r.Body))
		}
		next.ServeHTTP(w, r)
	})
}

// Transport wraps rt: closing the body of a response it returns first
// closes the inbound HTTP/2 request body Handler noted (see the package
// doc). Upgrades (101: the body is the connection) are left alone.
func Transport(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		in, _ := r.Context().Value(key{}).(io.Closer)
		if in == nil || resp.Body == nil || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
		resp.Body = &releasingBody{ReadCloser: resp.Body, in: in}
		return resp, nil
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// releasingBody is an upstream response body whose Close first closes
// the inbound request body.
type releasingBody struct {
	io.ReadCloser
	in io.Closer
}

func (b *releasingBody) Close() error {
	_ = b.in.Close() // an HTTP/2 request body's Close only breaks its pipe
	return b.ReadCloser.Close()
}
