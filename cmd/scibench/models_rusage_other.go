//go:build !unix

package main

import (
	"os"
	"time"
)

// processUsage is not available here: the harness reports no RSS or CPU time.
func processUsage(ps *os.ProcessState) (maxRSS int64, user, sys time.Duration, ok bool) {
	if ps == nil {
		return 0, 0, 0, false
	}
	return 0, ps.UserTime(), ps.SystemTime(), false
}
