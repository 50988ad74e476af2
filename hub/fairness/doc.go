// Package fairness bounds how many requests one tenant may have in flight
// on the hub at once, so that no tenant can use up the hub-wide budget.
//
// # Threat model
//
// The attacker is any person with a token, and therefore admin of their
// own home workspace and of every workspace they create below it. The
// hub's in-flight budget (--max-requests-inflight read-only,
// --max-mutating-requests-inflight mutating, as in kube-apiserver) is one
// pool shared by every workspace. Upstream's max-in-flight filter keeps
// one counter for everybody, so one person holding slow requests (the
// headers of a POST, then a body byte every few seconds, each holding its
// slot until the request timeout) made every other caller's writes fail
// with 429, --admin-user included (attack review B10). The rules:
//
//   - A request costs what it does (issue 24, B3: the share counted
//     requests, so 38 lists of 30 MB were "inside" it). Every request
//     but the long-running ones other than watches takes seats of the
//     hub-wide budget and of its tenant's share, read-only (get, list,
//     watch) and mutating separately, as --max-requests-inflight and
//     --max-mutating-requests-inflight count. A tenant's share is
//     --max-requests-inflight-tenant-fraction of each budget (at least
//     one seat). A get of one object takes one seat, or, when the
//     tenant owns it and it is big, one per ObjectReadBytesPerSeat of
//     its stored size (stored.go, hub/objsize); a patch or update of a
//     big object at least one per WriteBytesPerSeat of it. A mutating
//     request takes one per WriteBytesPerSeat (8 KiB) of the body it
//     announces, counted before the body is read, and its tenant's whole
//     share when the length is unknown (chunked): decoding and
//     validating a large body costs CPU before anything can refuse it
//     (second outside review, B-A: 2.4–3.7 s per 889 KB ConfigMap of
//     60,000 keys, refused or not; B-B: 900 KB merge patches). A GET of
//     an API document (OpenAPI, discovery) takes one per BytesPerSeat of
//     what that caller was last answered on that path in that
//     workspace, the whole share while unknown (B-C: 40 GETs of
//     /openapi/v2 and discovery at once took both cores). A list takes
//     one per BytesPerSeat of what the caller's own
//     last lists of that resource in that workspace (and namespace)
//     encoded (Estimator, learned by WithCost from allowed lists only, so
//     that the cost of a list never depends on whether a workspace the
//     caller may not see exists: outside review row 3), at most a quarter
//     of the hub-wide budget (a
//     list wider than its tenant's share runs only while nothing else of
//     that tenant does), and the tenant's whole share while its size is
//     not known yet; a watch takes the same
//     as a list while it sends its initial list, and one seat if it
//     starts from a resource version. A size is learned only from an
//     answer sent whole; one cut short (the caller hung up) may raise
//     what is known, never set it. A write or document wider than its
//     tenant's share (at most a quarter of the hub-wide budget) runs
//     only while nothing else of that tenant's kind does.
//   - Seats bound concurrency, not how fast cheap requests come back
//     (second review, B-C: 40 GETs of cached OpenAPI documents answered
//     1,300 times a second took both cores). Each tenant has a budget of
//     bytes moved (traffic.go: request bodies read and what the hub
//     wrote back), --tenant-traffic-bytes-per-cpu × GOMAXPROCS a second
//     after --tenant-traffic-burst-bytes. Bytes are charged as they move,
//     before compression, watch events and provider-route answers
//     included (third review, C-D, C-G, C-H). A request is admitted only
//     while its tenant's bucket covers what its requests in flight are
//     expected to move (the learned sizes above; the whole burst while
//     unknown); otherwise it waits before its seats, within the queue
//     wait below, then 429. At most the queue length of a tenant's
//     requests wait for its debt; past that, refused at once. A watch of
//     a tenant in debt is ended before its next event; a provider-route
//     answer is slowed to the rate. Debt deeper than four bursts is
//     forgiven. An upgraded connection (websocket, exec, port-forward)
//     is charged both ways and each read or write that puts its tenant
//     in debt waits for it, until the connection closes (sixth review
//     #5, upgrade.go); public provider paths (edge agents' tunnels) are
//     not charged: they carry consumers' traffic, charged where it
//     enters.
//   - Seats do not bound CPU for small requests either (seventh review,
//     #1: 40 GETs of a missing ConfigMap at once, one seat each, inside
//     one tenant's share, took both cores). Only the first
//     --tenant-requests-without-turn of a tenant's requests running at
//     once run freely; each further one runs in turns of a second
//     Turnstile (--busy-tenant-cpus, round-robin among tenants, at most
//     half to one), given back while it waits on the network, a provider
//     or its tenant's pacing (busy.go, Aside).
//   - A tenant's connections are bounded from whatever addresses: a
//     connection is its tenant's from its first counted request, and past
//     --max-connections-per-tenant her connection silent longest is
//     closed (hub/tenantconns; seventh review, #4).
//   - A request's head (target, query, header fields) past its first
//     4 KiB is charged to its tenant's traffic budget at admission, four
//     bytes a byte; a list's or watch's selector, bounded in size before it is
//     parsed (hub/selectors), is charged for its parses (1 KiB a term)
//     and its evaluation in the watch cache (4 bytes a term per object or
//     event), and widens the request by a seat per 64 terms (selector.go;
//     fifth review #16-#19: an 80,000-term selector weighed one seat, a
//     100 KB query nothing). A watch event costs at least
//     WatchEventBytes, sent or only evaluated (eighth review, B1: the
//     watch cache's fan-out to 500 watches). A watch whose evaluation puts its tenant in
//     debt is ended.
//   - Over its share, a request waits in its tenant's fair queue (at most
//     50 requests), then in the hub's, where tenants are the flows: at
//     most 5 s in all, counted from its arrival, so that time before the
//     queues counts too (outside review row 36); past either queue or that
//     wait, the answer is 429
//     TooManyRequests, a Status with Retry-After: 1, the same whichever
//     bound was hit, so that a caller learns nothing about other tenants'
//     load.
//   - Open watches are capped per tenant (--max-watches-per-tenant, never
//     more than the tenant fraction of --max-watches) and hub-wide
//     (--max-watches, by default half the open-file limit, which Go
//     raises to the hard limit at start): 3,000 watches of one tenant
//     exhausted 1,024 descriptors (B5). Over either: the same 429.
//     Administrators' watches count hub-wide but are never refused.
//   - The tenant is chosen so that it cannot be multiplied cheaply. A
//     person is the tree of her home workspace (root:users:<label>).
//     An identity confined to a workspace (a service-account token, an
//     impersonated identity: hub/cluster ConfinedTo) is the tree of that
//     workspace: its top, the home for root:users:<label>:..., else the
//     top-level child of root. A person mints any number of service
//     accounts and impersonates any name in her home and its children,
//     and all of them share her one share. Whoever a person lets into her
//     workspaces spends from her tree's share when confined there, and
//     from their own otherwise.
//   - Other identities (providers, system users) are one tenant per user
//     name; a confined identity whose workspace is unknown shares one
//     tenant with every other such identity (it is denied anyway).
//   - Hub administrators (--admin-user, --admin-group, system:masters, so
//     the loopback client too) are neither counted nor limited, as
//     upstream never refuses system:masters: the hub and its
//     administrators are never locked out by tenants.
//   - Health probes, GET of exactly /livez, /readyz and /healthz, are
//     neither counted nor limited, as upstream's "probes" FlowSchema puts
//     them in the exempt priority level. Anonymous callers (answered on
//     those paths only, hub/authn) are one tenant, so otherwise anybody
//     reaching the hub could hold that share and fail every kubelet's and
//     load balancer's probe. The handlers are in-memory checks of bounded
//     time; their sub-paths and other verbs are counted as any request.
//   - The limit runs after authentication and impersonation, before
//     authorization (upstream's priority-and-fairness slot), so requests
//     that are then denied count against their sender's share (B6: 450
//     concurrent 403s were never counted), and before any handler reads
//     the body, so a slow body holds seats of its own tenant only. It
//     replaces upstream's max-in-flight filter, which is switched off.
//   - Before any credential: the listener bounds connections (closing,
//     past --max-connections, one never answered from the prefix holding
//     the most), meters TLS handshakes per prefix and hub-wide at the
//     ClientHello, and requests without any credential are bounded per
//     prefix and hub-wide, their 429s held (conns.go, anonymous.go; third
//     outside review C-A: idle connections filled the open-file limit and
//     the hub exited; C-E: anonymous floods slowed other tenants 20-fold).
//     The hub's own address (every process on its host or in its pod)
//     has a handshake bucket of its own, past whose burst a handshake
//     waits for its token (own.go; fourth review, attempt 4: a flood
//     from 127.0.0.1 reconnected for free), and its requests without
//     credentials a rate and places of their own, past which they wait
//     up to 2 s, then get 429 (ownanon.go; sixth review #6: UI files
//     from 127.0.0.1 starved other tenants); the in-process loopback
//     client's own connections take no token and no place.
//   - The hub's own work is never queued behind tenants: the loopback
//     client (lease renewals of replicas: single providers, supervision,
//     the controllers) is system:masters. What starved lease renewals in
//     B2 was not a queue but the machine: 38 lists of 30 MB encoded at
//     once (in the second review: large bodies decoded, documents
//     gzipped at once). Size-based widths bound what is encoded at once:
//     one big list per tenant, four of the biggest hub-wide, about
//     --max-requests-inflight × 256 KiB in all; and what is decoded at
//     once: about 160 KiB of bodies per tenant, or one larger body
//     alone, and four of the largest hub-wide.
//   - A request relayed to a provider (an APIService) holds its seats
//     while the provider serves it, and the provider's calls back for it
//     (the resource proxy reading a workspace target as
//     wharf:workspace:<client>) are of the same tenant: queued for seats
//     behind the request they serve, they waited out the queue wait and
//     got 429 (sixth review, W10). They run on the relayed request's seats
//     instead, with the token the hub gave the provider for it
//     (delegation.go): same tenant only, one at a time, only while those
//     seats are held; their bytes are charged and their heavy work takes
//     CPU turns as any request's.
//   - A Workspace create or delete leaves work to the hub after it is
//     answered; it holds its tenant's whole mutating share for a while
//     after (upstream's FinalSeats and AdditionalLatency, in the tenant's
//     queue set only), so one tenant's workspace churn goes one at a time
//     and no other tenant waits for it (lifecycle.go; fifth review, #24).
//
// Upstream's API Priority and Fairness is used as far as it fits: its
// filter (k8s.io/apiserver/pkg/server/filters) in its place in the chain,
// with a Controller of this package as its flowcontrol.Interface, and its
// fair queue sets (fairqueuing/queueset) with the tenant as the flow,
// configured in code. Not used: its configuration controller and the
// flowcontrol.apiserver.k8s.io API, which the hub does not serve, and its
// flow distinguisher (the user name: every service account would be a
// flow of its own); its list estimate, which reads one object count per
// resource for the whole hub (so one tenant's big store would make every
// tenant's lists dear) and counts objects, not bytes; and its plain-text
// 429, which WithState turns into the hub's Status.
package fairness
