package fairness

// The byte scales of a request's width in seats, one per kind of work,
// set by what the hub's CPU pays per byte of each:
//
//   - A write costs in proportion to its body before anything can refuse
//     it: decoding, defaulting, validation, admission, a patch's merge,
//     the encoding of the stored object and of the answer. The second
//     outside review (B-A) measured 2.4–3.7 s of CPU for one 889 KB
//     ConfigMap of 60,000 keys, dry run or not, refused or not: a few ms
//     per KiB at worst. At 8 KiB a seat, a tenant's share of 20 mutating
//     seats holds at most about 160 KiB of bodies at once (or one larger
//     body alone), about half a second of one core's work at that rate,
//     whereas ten such bodies at once were half a minute of work: both
//     cores of a 2-core hub, and its lease renewals with them. Ordinary
//     writes (a Deployment applied by kubectl, a few KiB with its
//     last-applied annotation) take one or two seats.
//   - A GET of a named object encodes the whole object (and, read from
//     etcd, decodes it twice, hub/storage's guard included), and what that
//     costs follows its fields more than its bytes: the third outside
//     review (C-B) measured about as much CPU for one GET of a 960 KB
//     ConfigMap of 60,000 keys as for a list of 6.3 MB of single-value
//     ConfigMaps. So it is weighed at the worst case, as writes are, a
//     quarter as dear as lists: that 960 KB object takes 15 seats, at most
//     two of them at once in a tenant's 40-seat read share. Objects under
//     hub/objsize's threshold keep one seat.
//   - A list's encoding is what it costs (CPU and garbage, issue 24 B2:
//     38 lists of 30 MB), so its width follows the bytes of its answer as
//     last learned (estimate.go), not its objects: a few large objects
//     cost as much as many small ones. Most lists are well under a seat.
const (
	// WriteBytesPerSeat is how much of a write's body costs one seat.
	WriteBytesPerSeat = 8 << 10
	// ObjectReadBytesPerSeat is how much of a named object's stored size
	// costs one seat of a GET.
	ObjectReadBytesPerSeat = 64 << 10
	// BytesPerSeat is how much of a list response costs one seat.
	BytesPerSeat = 256 << 10
)
