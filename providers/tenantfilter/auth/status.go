package auth

import (
	"encoding/json"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writeStatus answers with the Status JSON kube-apiserver would send for err.
// The core has its own writer; the front end cannot depend on the core's
// unexported one, and its errors are few (401, 400, 503).
func writeStatus(w http.ResponseWriter, err error) {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		st = apierrors.NewInternalError(err)
	}
	s := st.Status()
	s.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	body, _ := json.Marshal(s)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(s.Code))
	_, _ = w.Write(body)
}

// unauthorized is the one 401 every authentication failure gets, so that a
// client cannot tell which type failed or why.
func unauthorized() error { return apierrors.NewUnauthorized("Unauthorized") }
