// Package selectors bounds what a label or field selector may cost the
// hub, and counts what each one does cost.
//
// # Threat model
//
// The attacker is any caller, authenticated or not, and, as admin of her
// home and its children, any tenant. A selector is hers to write, and
// kube-apiserver (v1.37) takes any size that fits its 1 MiB request
// header: it parses a labelSelector or fieldSelector in full, once as it
// builds the request's info (WithRequestInfo, the first filter, before
// authentication, so before any limit knows the tenant) and again in the
// handler, then evaluates every term against every object it scans, and,
// for a watch, against every event. The fifth outside review measured it
// on the hub:
//
//   - 200 watch loops with a 20,000-term labelSelector, each retried a
//     second after its 429: every retry was parsed before it was refused
//     (about 65 ms of CPU each, with key validation by regular
//     expression), some 13 CPU-seconds a second; another tenant's
//     throughput fell from 349 to 0.4 ops/s and the hub lost its
//     replicas: single provider's lease three times (#18).
//   - 40 concurrent lists with an 80,000-term labelSelector over 3,500
//     objects: 2.5 CPU-seconds each, all of it term evaluation in the
//     watch cache, while the answer, matching nothing, weighed one seat
//     (#16); the same with a 20,000-term fieldSelector (#17). A list whose
//     caller gave up went on evaluating to its end.
//
// The rules:
//
//   - Bounded before anything parses it: a labelSelector or fieldSelector
//     of more than --max-selector-terms comma-separated terms, or more
//     than --max-selector-bytes bytes decoded, is taken out of the query
//     (WithLimit, outside the request-info filter; counting is a scan of
//     the raw query, nothing is parsed), and the request is answered
//     kube-apiserver's 400 BadRequest Status naming the limit once its
//     caller is authenticated, counted by the flow control and authorized
//     (WithRefusal): answered before, a refusal would cost its sender
//     nothing and could be sent again at once. Everybody is bounded,
//     administrators too, as kube-apiserver's header limit bounds
//     everybody.
//   - What a selector within the bound costs is charged to its tenant
//     (hub/fairness): its parses, by its terms, to the tenant's traffic
//     budget at admission, and a list's or a watch's width grows with its
//     terms; and its evaluation, as it happens (Wrap, in the storage
//     decorator): terms × objects or events evaluated, charged to the
//     Charger the request carries. A watch whose tenant is in debt is ended.
//   - Evaluation stops once the request's context ends (the caller went
//     away or the request timed out): the remaining objects are not
//     matched, and their answer, which nobody reads, is discarded.
package selectors
