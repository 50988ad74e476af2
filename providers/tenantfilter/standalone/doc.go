// Package standalone is capsule-proxy's replacement listener: the
// `wharf-provider-tenant-filter standalone` command. It follows the
// sample-apiserver shape, Options → Complete → Validate → Config → New →
// Run, and takes capsule-proxy's flags one to one (same names, same
// defaults), plus --kubeconfig (the downstream and the provider's own
// credential), --client-ca (for TLSCertificate and XForwardedClientCert)
// and --status-controller.
//
// The listener (default :9001, HTTPS unless --enable-ssl=false; a
// self-signed certificate when no --ssl-cert-path is given) serves
// /healthz and /readyz without authentication and everything else through
// metrics → auth (package auth) → the filtering core. The metrics listener
// (--metrics-addr) serves /metrics, /healthz and /readyz.
//
// # Threat model
//
// The listener faces tenant users directly. Authentication is package
// auth's (see its threat model). This package's own duties: TLS by default
// (plain HTTP only when the operator says --enable-ssl=false, meant for a
// TLS terminator in front), client certificates requested but verified
// only by the authenticator against --client-ca (never against the
// system pool), health endpoints that reveal nothing but "ok", and the
// provider's credential (--kubeconfig) never logged.
package standalone
