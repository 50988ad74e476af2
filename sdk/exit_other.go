//go:build !unix

package sdk

import "os"

func exitGroup() { os.Exit(1) }
