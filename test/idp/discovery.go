package idp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"

	"github.com/zitadel/oidc/v3/pkg/oidc"
)

// withoutDeviceDiscovery drops device_authorization_endpoint from the
// discovery document: op always publishes it, but without DeviceFlow the
// grant is not offered, and clients decide from discovery whether it is.
func withoutDeviceDiscovery(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != oidc.DiscoveryEndpoint {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var doc map[string]any
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &doc) != nil {
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		delete(doc, "device_authorization_endpoint")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	})
}
