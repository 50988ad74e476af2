package fairness

// WriteBytesPerSeat is how much of a write's body costs one seat. A write
// costs the hub CPU in proportion to its body before anything can refuse
// it: decoding, defaulting, validation, admission, a patch's merge, the
// encoding of the stored object and of the answer. The second outside
// review (B-A) measured 2.4–3.7 s of CPU for one 889 KB ConfigMap of
// 60,000 keys, dry run or not, refused or not: a few ms per KiB at worst.
// At 8 KiB a seat, a tenant's share of 20 mutating seats holds at most
// about 160 KiB of bodies at once (or one larger body alone), about half
// a second of one core's work at that worst rate, whereas ten such
// bodies at once were half a minute of work: both cores of a 2-core hub,
// and its lease renewals with them. Ordinary writes (a Deployment
// applied by kubectl, a few KiB with its last-applied annotation) take
// one or two seats.
const WriteBytesPerSeat = 8 << 10

// writeSeats is a mutating request's width, from the body length it
// announces (Content-Length), known before a byte of the body is read:
// one seat per WriteBytesPerSeat, at least one, at most most. A body of
// unknown length (chunked, -1) costs unknown, its tenant's whole share.
// The announced length bounds the body: the server reads no more of it.
// A write wider than its tenant's share runs only while nothing else of
// that tenant's writes does (upstream's queue sets dispatch a request
// wider than their limit only into an empty set).
func writeSeats(contentLength int64, unknown, most uint64) uint64 {
	if contentLength < 0 {
		return min(unknown, most)
	}
	seats := uint64((contentLength + WriteBytesPerSeat - 1) / WriteBytesPerSeat)
	return min(max(seats, 1), most)
}
