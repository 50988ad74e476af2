package etcd

// MaxTxnOps is etcd's default --max-txn-ops, which the embedded etcd
// keeps: a transaction with more compares, or more operations in its Then
// or Else branch, is refused with "etcdserver: too many operations in txn
// request". A transaction whose size follows a count a tenant controls
// (its workspaces, say) must be split below it.
const MaxTxnOps = 128
