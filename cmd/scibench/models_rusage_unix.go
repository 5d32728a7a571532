//go:build unix

package main

import (
	"os"
	"runtime"
	"syscall"
	"time"
)

// processUsage returns the peak resident set size (bytes) and the user and system CPU time of an
// exited child process.
func processUsage(ps *os.ProcessState) (maxRSS int64, user, sys time.Duration, ok bool) {
	if ps == nil {
		return 0, 0, 0, false
	}
	ru, isRU := ps.SysUsage().(*syscall.Rusage)
	if !isRU || ru == nil {
		return 0, 0, 0, false
	}
	maxRSS = int64(ru.Maxrss)
	if runtime.GOOS != "darwin" { // Linux and the BSDs count kilobytes, macOS bytes
		maxRSS *= 1024
	}
	return maxRSS, time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), true
}
