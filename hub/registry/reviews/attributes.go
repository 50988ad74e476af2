package reviews

import (
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// resourceAttributes builds the authorizer input for a resource check. An
// empty version matches every version, as upstream.
func resourceAttributes(u user.Info, in *authorizationv1.ResourceAttributes) authorizer.AttributesRecord {
	version := in.Version
	if version == "" {
		version = "*"
	}
	return authorizer.AttributesRecord{
		User: u, ResourceRequest: true, Verb: in.Verb, Namespace: in.Namespace,
		APIGroup: in.Group, APIVersion: version, Resource: in.Resource, Subresource: in.Subresource, Name: in.Name,
	}
}

func nonResourceAttributes(u user.Info, in *authorizationv1.NonResourceAttributes) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: in.Verb, Path: in.Path}
}

// specUser is the identity a SubjectAccessReview asks about.
func specUser(spec authorizationv1.SubjectAccessReviewSpec) user.Info {
	extra := map[string][]string{}
	for k, v := range spec.Extra {
		extra[k] = v
	}
	return &user.DefaultInfo{Name: spec.User, UID: spec.UID, Groups: spec.Groups, Extra: extra}
}

// decide runs the authorizer and renders its answer as a review status.
func decide(attrs authorizer.AttributesRecord, eval func(authorizer.Attributes) (authorizer.Decision, string, error)) authorizationv1.SubjectAccessReviewStatus {
	d, reason, err := eval(attrs)
	st := authorizationv1.SubjectAccessReviewStatus{
		Allowed: d == authorizer.DecisionAllow,
		Denied:  d == authorizer.DecisionDeny,
		Reason:  reason,
	}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}
