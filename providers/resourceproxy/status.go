package resourceproxy

import (
	"encoding/json"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// writeStatus answers with a Kubernetes Status, as kube-apiserver would.
func writeStatus(w http.ResponseWriter, st metav1.Status) {
	st.Kind, st.APIVersion = "Status", "v1"
	if st.Status == "" {
		st.Status = metav1.StatusFailure
	}
	b, err := json.Marshal(st)
	if err != nil {
		http.Error(w, "encoding status", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(b)
}

func writeErr(w http.ResponseWriter, err *apierrors.StatusError) { writeStatus(w, err.Status()) }

// unavailable is the one 503 every cause shares; logs and metrics tell the
// causes apart.
func unavailable(w http.ResponseWriter, target, gv string) {
	w.Header().Set("Retry-After", RetryAfterSeconds)
	st := apierrors.NewServiceUnavailable(fmt.Sprintf("target %q for %s is unavailable", target, gv)).Status()
	st.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
	writeStatus(w, st)
}

func notFound(w http.ResponseWriter, group, resource, name string) {
	writeErr(w, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resource}, name))
}

func upgradeRejected(w http.ResponseWriter) {
	writeStatus(w, metav1.Status{Code: http.StatusNotImplemented, Reason: metav1.StatusReason("NotImplemented"),
		Message: "resource proxy does not support connection upgrades"})
}
