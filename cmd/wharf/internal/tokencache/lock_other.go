//go:build !unix

package tokencache

import "os"

// Without flock, concurrent refreshes may race; the loser re-logs in.
func lockFile(*os.File) error   { return nil }
func unlockFile(*os.File) error { return nil }
