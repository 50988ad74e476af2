package storecap

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/wharfhub/wharf/hub/quota"
)

// Message is the reason every refused write is given (see the package
// doc for why it names no sizes).
const Message = "the hub's store is nearly full (above its high-water mark): creates and updates are refused until space is freed; reads and deletes still work. Delete what you no longer need, or ask a hub administrator"

// errFull is the refusal's cause.
var errFull = errors.New(Message)

// Admission refuses non-admin creates and updates while the store is above
// its high-water mark. It is a validating plugin, so it sees the object
// that would be stored (after defaulting and the server-side apply merge)
// on every write path: create, update, patch, apply, status and other
// subresources, dry-run; apiextensions shares the chain, so custom
// resources too.
type Admission struct {
	*admission.Handler
	m       *Monitor
	isAdmin func(user.Info) bool
}

var _ admission.ValidationInterface = &Admission{}

// NewAdmission returns the plugin. isAdmin reports hub administrators;
// members of system:masters (the loopback client) are exempt in any case.
func NewAdmission(m *Monitor, isAdmin func(user.Info) bool) *Admission {
	return &Admission{Handler: admission.NewHandler(admission.Create, admission.Update), m: m, isAdmin: isAdmin}
}

// notStored are the groups whose creates persist nothing: reviews.
var notStored = map[string]bool{"authorization.k8s.io": true, "authentication.k8s.io": true}

// Validate implements admission.ValidationInterface.
func (a *Admission) Validate(ctx context.Context, attrs admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.m == nil || a.exempt(attrs.GetUserInfo()) || !stored(attrs.GetResource(), attrs.GetSubresource()) {
		return nil
	}
	if attrs.GetOperation() == admission.Update && beingDeleted(attrs) {
		// Removing a finalizer is part of a delete.
		return nil
	}
	var w write
	if a.m.careful() {
		w = newWrite(estimate(ctx, attrs), replaced(attrs))
	}
	if a.m.admitWrite(w, !attrs.IsDryRun()) {
		return nil
	}
	refused.Inc()
	return admission.NewForbidden(attrs, errFull)
}

func (a *Admission) exempt(u user.Info) bool {
	if u == nil {
		return false
	}
	if slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup) {
		return true
	}
	return a.isAdmin != nil && a.isAdmin(u)
}

func stored(r schema.GroupVersionResource, sub string) bool {
	if notStored[r.Group] {
		return false
	}
	// A TokenRequest is signed, not stored.
	return !(r.Group == "" && r.Resource == "serviceaccounts" && sub == "token")
}

func beingDeleted(attrs admission.Attributes) bool {
	old := attrs.GetOldObject()
	if old == nil {
		return false
	}
	m, err := meta.Accessor(old)
	return err == nil && m.GetDeletionTimestamp() != nil
}

// replaced is the size of the stored object an update replaces (0 for a
// create): its protobuf size when it has one (built-in kinds; no
// encoding), else its JSON size. Both are close to what etcd holds for
// it; the split it feeds (admit.go) only needs the order of magnitude.
func replaced(attrs admission.Attributes) int64 {
	if attrs.GetOperation() != admission.Update {
		return 0
	}
	old := attrs.GetOldObject()
	if old == nil {
		return 0
	}
	if p, ok := old.(interface{ Size() int }); ok {
		return int64(p.Size())
	}
	b, err := json.Marshal(old)
	if err != nil {
		return 0
	}
	return int64(len(b))
}

// estimate is what etcd will store for the object: the measure hub/quota
// takes of every counted write, once per request (and reuses to charge
// it); else, for resources it does not count, the object's JSON size
// (a little more than protobuf, a little less than a revision's
// overhead).
func estimate(ctx context.Context, attrs admission.Attributes) int64 {
	if n, ok := quota.WriteSize(ctx, attrs); ok {
		return max(n, 1)
	}
	obj := attrs.GetObject()
	if obj == nil {
		return 1
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return 1
	}
	return int64(len(b))
}
