package storage

// ObjectSizes learns the stored size of per-workspace values (hub/objsize:
// the hub weighs requests naming a big object by it, issue 24 C-B). The
// key guard (guard.go) is the one layer that sees both the etcd key and
// the bytes of every value written and read, so it reports them there:
// nothing is encoded to measure a size.
type ObjectSizes interface {
	// Stored notes that the value at key (without the storage prefix:
	// /<group>/<resource>/<cluster>/[<namespace>/]<name>) is n bytes;
	// written reports a write (the size now stored), else a read (a
	// value of that key at some revision, perhaps an old one). It must
	// be cheap and must not block: it runs on every etcd read and write.
	Stored(key string, n int, written bool)
}
