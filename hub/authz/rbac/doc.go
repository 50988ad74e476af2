// Package rbac is Wharf's cluster-aware RBAC authorizer: rbac/v1 semantics
// (verbs, resources, subresources, resourceNames, nonResourceURLs, apiGroups,
// "*", ClusterRole aggregation, User, Group and ServiceAccount subjects),
// evaluated per logical cluster (workspace) with only the Roles,
// ClusterRoles and bindings stored in that cluster.
//
// # Threat model
//
// Workspaces share one hub, so the main risk is a grant leaking across
// workspaces: being admin in one must give nothing in another, including a
// child workspace. The package defends that as follows.
//
//   - Fail closed. A request without a logical cluster in its context, or with
//     a wildcard context, gets DecisionNoOpinion; hub-wide administrators are
//     the job of the privileged-groups authorizer ahead of this one in the
//     chain, and the final deny handles everything else. Until every informer
//     has delivered its initial list (HasSynced), all decisions are
//     NoOpinion, so a restarting hub never answers from a partial index.
//     Objects lacking the wharf.dev/cluster annotation are ignored, so they
//     grant nothing anywhere. The authorizer never returns Deny, only Allow or
//     NoOpinion, as upstream RBAC.
//   - Per-cluster scoping. The index is partitioned by the cluster annotation
//     that the storage layer stamps on every object, overwriting client
//     values, so clients cannot place a binding into another workspace. A
//     decision reads only the request cluster's partition. roleRefs resolve
//     inside the same partition (and a RoleBinding's Role inside its own
//     namespace), and aggregationRule selectors only ever see ClusterRoles of
//     the same cluster.
//   - Cost. Bindings are filed by subject (user name, group; ServiceAccounts
//     under their user name), so a decision touches only the bindings that
//     name the caller in the request cluster. Nothing depends on the number of
//     workspaces beyond one map lookup; BenchmarkAuthorize measures 1 versus
//     10,000 clusters.
//   - Escalation. EscalationChecker gives the RBAC registry (hub/registry's
//     GuardedStore) upstream's rules, exactly: a Role, ClusterRole or
//     binding write passes only when the caller is privileged (the
//     privileged groups, system:masters by default), or for roles is
//     allowed "escalate" on the role the request addresses (asked with the
//     request's resource, namespace and name, as upstream, so a create is
//     covered only by a grant without resourceNames), or for bindings is
//     allowed "bind" on the referenced role in the binding's namespace, or
//     already holds every rule the object grants, in that workspace and
//     namespace. A ClusterRole whose new or old version has an
//     aggregationRule with selectors needs full authority (every verb on
//     every resource and non-resource URL) in the workspace, with
//     upstream's message. Labels are not exempt from the check (the
//     registry exempts only GC-only updates): they decide which roles an
//     aggregated role gathers, so relabelling a role is granting its rules.
//   - Aggregation is confined as everything else: a selector sees only the
//     ClusterRoles of its own workspace, and an aggregated role's own
//     .rules grant nothing (they are recomputed from the selected roles).
//   - Cost to others (attack review B6b). One tenant's RBAC objects must
//     not degrade other workspaces. Aggregation is kept by reference: an
//     aggregated role stores the names of the plain roles it reaches and
//     decisions walk those roles' own rule lists, so memory is linear in
//     what the tenant stored. ClusterRole events only file the role; the
//     aggregation is recomputed by a pool of workers from a snapshot,
//     outside the partition lock, and swapped in only if still current.
//     The queue hands a workspace to one worker at a time, so neither the
//     shared informer handler nor readers of any partition (whoami
//     included) wait for a workspace's aggregation. Quota bounds what a
//     workspace may store (--max-workspace-rbac-rules, default 20,000
//     rules across Roles and ClusterRoles; --max-workspace-aggregated-
//     clusterroles, default 100), checked by the registry on every Role and
//     ClusterRole write path with upstream's 403 "exceeded quota"; hub
//     admins are exempt. The count comes from this index, so concurrent
//     writes racing the index can overshoot it once, each by at most the
//     bound; BenchmarkReaggregateBig and BenchmarkAuthorizeBig measure a
//     workspace at the bound.
//
// # Freshness caveats
//
// The index is eventually consistent with storage: a binding created or
// deleted becomes effective when its watch event reaches the informer,
// typically milliseconds, but longer under load or while a watch is being
// re-established. Revocation is therefore not instantaneous, as with upstream
// RBAC. Escalation checks read the same index, so a grant that has just been
// revoked may still cover a role write for that short window. Aggregated
// ClusterRoles are recomputed asynchronously after every ClusterRole event
// in their cluster, so a newly selected role's rules take effect a moment
// after the role itself (as with upstream's aggregation controller); a
// role deleted, emptied of rules or made aggregated stops contributing at
// once, since decisions resolve the references against the live roles,
// while a removed label takes effect with the recomputation. HasSynced
// waits for the aggregation of the initial list. The rules stored in an
// aggregated ClusterRole's own .rules are ignored for decisions; the hub
// writes the aggregated rules there per cluster, as upstream's aggregation
// controller does, for readers only (writeback.go, EnableWriteBack).
//
// # Wiring
//
//	authz, err := rbac.New(rbac.Sources{
//		Roles:               rbac.StorageListWatch(rolesStore),
//		RoleBindings:        rbac.StorageListWatch(roleBindingsStore),
//		ClusterRoles:        rbac.StorageListWatch(clusterRolesStore),
//		ClusterRoleBindings: rbac.StorageListWatch(clusterRoleBindingsStore),
//	})
//	go authz.Run(ctx)
//	authz.WaitForSync(ctx) // or register authz.HasSynced as a readiness check
//
// authz is then the RBAC step of the authorizer chain and the RuleResolver
// for SelfSubjectRulesReview, and EscalationChecker{RBAC: authz, Authorizer:
// chain} guards writes to the four RBAC resources.
package rbac
