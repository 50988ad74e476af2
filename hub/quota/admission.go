package quota

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/wharfhub/wharf/hub/home"
)

// Admission refuses any change of a Workspace's quota.wharf.dev/
// annotations, or of the hub's own HomeOwnerAnnotation, by anyone but a
// hub administrator, on every write path (create, update, patch,
// server-side apply; dry runs are admitted the same way). A workspace
// admin can neither raise her own ceilings, which live on her Workspace
// in the parent, nor her children's; nor claim a workspace for another
// user (the sixth review's W9: accepted on her child workspace, where the
// hub reads it nowhere, but only the hub writes the homes' owner).
type Admission struct {
	*admission.Handler
	IsAdmin func(user.Info) bool
}

var _ admission.ValidationInterface = &Admission{}

// NewAdmission returns the guard.
func NewAdmission(isAdmin func(user.Info) bool) *Admission {
	return &Admission{Handler: admission.NewHandler(admission.Create, admission.Update), IsAdmin: isAdmin}
}

// Validate implements admission.ValidationInterface.
func (a *Admission) Validate(ctx context.Context, attrs admission.Attributes, _ admission.ObjectInterfaces) error {
	if attrs.GetResource().GroupResource() != workspacesResource || attrs.GetSubresource() != "" {
		return nil
	}
	if u := attrs.GetUserInfo(); u == nil || a.exempt(u) {
		return nil
	}
	if changed(attrs, func(k string) bool { return strings.HasPrefix(k, AnnotationPrefix) }) {
		return admission.NewForbidden(attrs, fmt.Errorf("the %s annotations are set by hub administrators only", AnnotationPrefix))
	}
	if changed(attrs, func(k string) bool { return k == HomeOwnerAnnotation }) {
		return admission.NewForbidden(attrs, fmt.Errorf("the %s annotation is set by the hub only", HomeOwnerAnnotation))
	}
	return nil
}

// changed reports whether the write changes, adds or removes an
// annotation whose key is guarded.
func changed(attrs admission.Attributes, guarded func(string) bool) bool {
	before, after := annotations(attrs.GetOldObject(), guarded), annotations(attrs.GetObject(), guarded)
	if len(before) != len(after) {
		return true
	}
	for k, v := range after {
		if w, ok := before[k]; !ok || w != v {
			return true
		}
	}
	return false
}

func (a *Admission) exempt(u user.Info) bool { return hubUser(u, a.IsAdmin) }

// HomeOwnerAnnotation is hub/home's record of a home's owner, written by
// the hub when it creates the home (not through admission).
const HomeOwnerAnnotation = home.OwnerAnnotation

// annotations are obj's annotations whose keys are guarded.
func annotations(obj runtime.Object, guarded func(string) bool) map[string]string {
	if obj == nil {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	var out map[string]string
	for k, v := range m.GetAnnotations() {
		if guarded(k) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}
