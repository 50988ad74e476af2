// Package reviews serves the access-review APIs in every workspace:
// authorization.k8s.io/v1 SelfSubjectAccessReview, LocalSubjectAccessReview,
// SubjectAccessReview and SelfSubjectRulesReview, and authentication.k8s.io/v1
// SelfSubjectReview (kubectl auth whoami).
//
// Reviews are virtual: nothing is stored. They are answered by the same
// authorizer that guards requests, with the request's workspace in the
// context, so `kubectl auth can-i` in a workspace answers for that
// workspace only. Who may ask about others (SubjectAccessReview,
// LocalSubjectAccessReview) is itself decided by that authorizer, like any
// create.
package reviews
