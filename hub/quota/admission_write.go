package quota

import (
	"context"

	"k8s.io/apiserver/pkg/admission"
)

// writeAdmission is the accountant's admission step: it measures every
// counted create and update once (writesize.go), and answers dry runs.
//
// A dry-run create or update never reaches the storage the accountant
// counts (upstream's dry-run storage answers it from the request's
// object), so without this step a dry run past a ceiling was admitted
// while the real write would be refused. Here it gets the 403 exceeded
// quota answer the real write would get, against the usage stored now,
// and charges nothing: kube's ResourceQuota admission checks dry runs the
// same way. Admission sees the final object of every write path (create,
// update, patch, server-side apply, status), after the server-side apply
// merge and the strategy. It is last in the chain, as the real write's
// check comes after every admission plugin.
type writeAdmission struct {
	*admission.Handler
	a *Accountant
}

var _ admission.ValidationInterface = &writeAdmission{}

// WriteAdmission returns the admission step; it belongs last in the
// validating chain.
func (a *Accountant) WriteAdmission() admission.ValidationInterface {
	return &writeAdmission{Handler: admission.NewHandler(admission.Create, admission.Update), a: a}
}

// Validate implements admission.ValidationInterface.
func (w *writeAdmission) Validate(ctx context.Context, attrs admission.Attributes, _ admission.ObjectInterfaces) error {
	m := w.a.measureFor(ctx, attrs)
	if m == nil || !attrs.IsDryRun() {
		return nil
	}
	d, op := m.by.one(m.after), "create"
	if m.update {
		before, err := m.by.sizer.size(attrs.GetOldObject())
		if err != nil {
			return nil
		}
		d, op = Usage{Bytes: m.after - before}, "update"
	}
	if !d.Grows() || !w.a.enforced(ctx, m.by.gr, op) {
		return nil
	}
	return w.a.check(ctx, m.by.gr, m.name, m.cluster, d)
}
