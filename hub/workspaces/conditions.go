package workspaces

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
)

// setCondition records a condition of ws, keeping its last transition time
// when only reason or message change, as meta.SetStatusCondition does. It
// reports whether anything changed, so callers skip no-op writes.
func setCondition(ws *tenancyv1alpha1.Workspace, typ string, status metav1.ConditionStatus, reason, message string) bool {
	return meta.SetStatusCondition(&ws.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: ws.Generation,
	})
}

// markReady is the status of an initialized workspace.
func markReady(ws *tenancyv1alpha1.Workspace) bool {
	changed := ws.Status.Phase != tenancyv1alpha1.WorkspacePhaseReady
	ws.Status.Phase = tenancyv1alpha1.WorkspacePhaseReady
	return setCondition(ws, tenancyv1alpha1.WorkspaceReady, metav1.ConditionTrue, tenancyv1alpha1.WorkspaceReasonInitialized,
		"The workspace is initialized and serving.") || changed
}

// markTerminating is the status of a Workspace whose deletion started.
func markTerminating(ws *tenancyv1alpha1.Workspace) bool {
	changed := ws.Status.Phase != tenancyv1alpha1.WorkspacePhaseTerminating
	ws.Status.Phase = tenancyv1alpha1.WorkspacePhaseTerminating
	return setCondition(ws, tenancyv1alpha1.WorkspaceReady, metav1.ConditionFalse, tenancyv1alpha1.WorkspaceReasonTerminating,
		"The workspace is being deleted.") || changed
}

// needsReadyCondition is true for a Workspace stored Ready before the hub
// recorded conditions: the controller adds the condition once.
func needsReadyCondition(ws *tenancyv1alpha1.Workspace) bool {
	return ws.DeletionTimestamp == nil && ws.Status.Phase == tenancyv1alpha1.WorkspacePhaseReady &&
		meta.FindStatusCondition(ws.Status.Conditions, tenancyv1alpha1.WorkspaceReady) == nil
}
