package login

import (
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
)

// wellKnown is GET /.well-known/wharf: what the CLI needs besides the hub
// URL. Unauthenticated by design; it holds nothing secret (the client id
// is public: the CLI is a public client).
type wellKnown struct {
	HubURL string `json:"hubURL"`
	// CA is the PEM of the hub's serving CA: public, the trust anchor
	// that join bundles pin (the portal's edges page builds them).
	CA         string         `json:"ca,omitempty"`
	OIDC       *wellKnownOIDC `json:"oidc,omitempty"`
	TokenLogin bool           `json:"tokenLogin"`
}

type wellKnownOIDC struct {
	IssuerURL           string   `json:"issuerURL"`
	ClientID            string   `json:"clientID"`
	Scopes              []string `json:"scopes"`
	DeviceAuthorization bool     `json:"deviceAuthorization"`
}

func (l *Login) wellKnown(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET")
		return
	}
	doc := wellKnown{HubURL: strings.TrimSuffix(l.cfg.ExternalURL, "/"), CA: string(l.cfg.CAData), TokenLogin: l.tokenLoginEnabled()}
	if o := l.cfg.OIDC; o != nil {
		client := o.CLIClientID
		if client == "" {
			client = o.ClientID
		}
		doc.OIDC = &wellKnownOIDC{
			IssuerURL: o.IssuerURL, ClientID: client, Scopes: l.cfg.Options.Scopes,
			DeviceAuthorization: l.idp.deviceAuthorization(r.Context()),
		}
	}
	writeJSON(w, http.StatusOK, doc)
}

func (l *Login) tokenLoginEnabled() bool {
	return l.cfg.Options.TokenLoginEnabled(l.cfg.OIDC != nil)
}

// tokenLogin is POST /auth/token-login (development): a static bearer
// token (the admin token or one from --token-auth-file) is exchanged for
// a kubeconfig that uses the same token against the caller's workspace.
// Only static tokens: an OIDC user gets a self-refreshing kubeconfig from
// the CLI's OIDC login instead.
func (l *Login) tokenLogin(w http.ResponseWriter, r *http.Request, d Deps) {
	if !l.tokenLoginEnabled() || d.StaticTokens == nil {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "token login is disabled (--enable-token-login)")
		return
	}
	if r.Method != http.MethodPost {
		methodNotAllowed(w, "POST")
		return
	}
	log := klog.FromContext(r.Context())
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		unauthorized(w)
		return
	}
	resp, ok, err := d.StaticTokens.AuthenticateToken(r.Context(), token)
	if err != nil || !ok {
		log.V(2).Info("Token login refused", "err", err)
		unauthorized(w)
		return
	}
	ws := "root"
	if d.Home != nil {
		if ws, err = d.Home(r.Context(), resp.User); err != nil {
			internalError(w, r, err)
			return
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["wharf"] = &clientcmdapi.Cluster{
		Server: strings.TrimSuffix(l.cfg.ExternalURL, "/") + "/clusters/" + ws, CertificateAuthorityData: l.cfg.CAData,
	}
	cfg.AuthInfos[resp.User.GetName()] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["wharf"] = &clientcmdapi.Context{Cluster: "wharf", AuthInfo: resp.User.GetName()}
	cfg.CurrentContext = "wharf"
	body, err := clientcmd.Write(*cfg)
	if err != nil {
		internalError(w, r, err)
		return
	}
	log.V(1).Info("Token login", "user", resp.User.GetName(), "workspace", ws)
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="wharf"`)
	writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
}
