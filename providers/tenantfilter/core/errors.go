package core

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// writeStatus writes err as a Kubernetes Status, the way kube-apiserver
// does: an apierrors error keeps its code, reason and message; anything
// else is a 500 whose message says nothing about internals (the details
// are logged).
func writeStatus(w http.ResponseWriter, r *http.Request, err error) {
	var st metav1.Status
	var api apierrors.APIStatus
	if errors.As(err, &api) {
		st = api.Status()
	} else {
		klog.ErrorS(err, "tenant filter: internal error", "path", r.URL.Path)
		st = apierrors.NewInternalError(errors.New("the tenant filter failed to serve the request")).ErrStatus
	}
	st.Kind, st.APIVersion = "Status", "v1"
	if st.Status == "" {
		st.Status = metav1.StatusFailure
	}
	code := int(st.Code)
	if code == 0 {
		code = http.StatusInternalServerError
		st.Code = int32(code)
	}
	body, merr := json.Marshal(&st)
	if merr != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

func errUnauthorized() error { return apierrors.NewUnauthorized("Unauthorized") }

// forbidden is kube-apiserver's RBAC denial text for a request.
func forbidden(user, verb, group, resource, namespace, name string) error {
	scope := "at the cluster scope"
	if namespace != "" {
		scope = "in the namespace \"" + namespace + "\""
	}
	subject := resource
	if group != "" {
		subject = resource + "." + group
	}
	if name != "" {
		subject = subject + " \"" + name + "\""
	}
	msg := "User \"" + user + "\" cannot " + verb + " resource \"" + resource + "\" in API group \"" + group + "\" " + scope
	st := apierrors.NewForbidden(groupResource(group, resource), name, errors.New(msg)).ErrStatus
	st.Message = subject + " is forbidden: " + msg
	return &apierrors.StatusError{ErrStatus: st}
}
