package fairness

// writeSeats is a mutating request's width, from the body length it
// announces (Content-Length), known before a byte of the body is read:
// one seat per WriteBytesPerSeat (scales.go), at least one, at most
// most. A body of unknown length (chunked, -1) costs unknown, its
// tenant's whole share.
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
