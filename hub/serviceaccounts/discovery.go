package serviceaccounts

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-jose/go-jose/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
)

// The service-account issuer discovery documents, at upstream's paths
// (kube-apiserver's ServiceAccountIssuerDiscovery): an OpenID Connect
// provider configuration naming the issuer and where its keys are, and
// the keys as a JWK set, so that anyone holding a hub service-account
// token can verify it offline, as with a Kubernetes cluster's.
const (
	OpenIDConfigPath = "/.well-known/openid-configuration"
	JWKSPath         = "/openid/v1/jwks"
	// discoveryCacheControl is upstream's: the documents change only when
	// the signing key does.
	discoveryCacheControl = "public, max-age=3600"
	jwksContentType       = "application/jwk-set+json"
)

// openIDConfig is the provider configuration with upstream's fields.
type openIDConfig struct {
	Issuer        string   `json:"issuer"`
	JWKSURI       string   `json:"jwks_uri"`
	ResponseTypes []string `json:"response_types_supported"`
	SubjectTypes  []string `json:"subject_types_supported"`
	SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
}

// Discovery serves the two documents of t; the configuration points
// verifiers at jwksBase + JWKSPath (the hub's external URL).
type Discovery struct {
	config []byte
	jwks   []byte
	// Serializer encodes error Statuses; nil: JSON.
	Serializer runtime.NegotiatedSerializer
}

// NewDiscovery renders the documents once: they are fixed for the life of
// the key.
func NewDiscovery(t *Tokens, jwksBase string) (*Discovery, error) {
	cfg, err := json.Marshal(openIDConfig{
		Issuer:        t.issuer,
		JWKSURI:       strings.TrimSuffix(jwksBase, "/") + JWKSPath,
		ResponseTypes: []string{"id_token"},
		SubjectTypes:  []string{"public"},
		SigningAlgs:   []string{string(t.key.Algorithm())},
	})
	if err != nil {
		return nil, fmt.Errorf("openid configuration: %w", err)
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key: t.key.Public(), KeyID: t.key.ID(), Algorithm: string(t.key.Algorithm()), Use: "sig",
	}}}
	jwks, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	return &Discovery{config: cfg, jwks: jwks}, nil
}

// ServeConfig answers GET OpenIDConfigPath.
func (d *Discovery) ServeConfig(w http.ResponseWriter, r *http.Request) {
	d.serve(w, r, "application/json", d.config)
}

// ServeJWKS answers GET JWKSPath.
func (d *Discovery) ServeJWKS(w http.ResponseWriter, r *http.Request) {
	d.serve(w, r, jwksContentType, d.jwks)
}

func (d *Discovery) serve(w http.ResponseWriter, r *http.Request, ctype string, body []byte) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !accepts(r.Header.Values("Accept"), ctype) {
		// Upstream's answer when the one representation is not
		// acceptable: its router's text, as a Status.
		st := metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
			Message: "406: Not Acceptable\n\nAvailable representations: " + ctype,
		}
		if d.Serializer != nil {
			// Negotiated like every Status (YAML for a YAML client).
			responsewriters.ErrorNegotiated(&apierrors.StatusError{ErrStatus: st}, d.Serializer, schema.GroupVersion{}, w, r)
			return
		}
		b, _ := json.Marshal(st)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotAcceptable)
		_, _ = w.Write(b)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", discoveryCacheControl)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

// accepts reports whether Accept headers allow ctype: no header, */*,
// type/* or the type itself (parameters ignored).
func accepts(headers []string, ctype string) bool {
	if len(headers) == 0 {
		return true
	}
	major, _, _ := strings.Cut(ctype, "/")
	for _, h := range headers {
		for _, r := range strings.Split(h, ",") {
			mt, _, _ := strings.Cut(r, ";")
			switch mt = strings.TrimSpace(mt); mt {
			case "", "*/*", major + "/*", ctype:
				return true
			}
		}
	}
	return false
}
