package tenantfilter

import (
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// recorder is a header-recording reverse proxy in front of the fixture's
// kube-apiserver (pinniped-style): the tenant filter's --kubeconfig points
// at it, so a test sees exactly which headers the filter forwarded, while
// the real kube-apiserver still answers.
type recorder struct {
	srv *httptest.Server

	mu   sync.Mutex
	seen []recordedRequest
}

type recordedRequest struct {
	Path   string
	Header http.Header
}

func startRecorder(t testing.TB) (*recorder, string) {
	t.Helper()
	adm := fx.Config()
	target, err := url.Parse(adm.Host)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rest.TransportFor(&rest.Config{Host: adm.Host, TLSClientConfig: rest.TLSClientConfig{CAData: adm.CAData}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = target.Host
		},
		Transport: tr, FlushInterval: -1,
	}
	rec.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen = append(rec.seen, recordedRequest{Path: r.URL.Path, Header: r.Header.Clone()})
		rec.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(rec.srv.Close)
	kc := fx.WriteKubeconfig(t, uniq("recorder"), &rest.Config{
		Host: rec.srv.URL, BearerToken: adm.BearerToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: certPEM(rec.srv)},
	})
	return rec, kc
}

// requests returns the recorded requests whose path starts with prefix.
func (r *recorder) requests(prefix string) []recordedRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []recordedRequest
	for _, s := range r.seen {
		if strings.HasPrefix(s.Path, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// certPEM is an httptest TLS server's certificate in PEM.
func certPEM(s interface{ Certificate() *x509.Certificate }) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}
