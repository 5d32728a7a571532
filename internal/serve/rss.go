package serve

import (
	"bytes"
	"os"
	"strconv"
)

// peakRSS returns this process's peak resident set size in bytes so far (VmHWM), or 0 where the
// system does not report it (anything but Linux). The report records it after every layer, so the
// layer that raised the peak shows as the first with the new value.
//
// VmHWM alone is not monotone: the kernel folds the current RSS, read from approximate per-CPU
// counters, into it at read time and records the high-water mark only at unmap and exit, so a
// later read can be a few hundred KiB lower than an earlier one. The recorder keeps the running
// maximum of what it read.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	i := bytes.Index(b, []byte("VmHWM:"))
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+len("VmHWM:"):])
	if len(f) < 2 || string(f[1]) != "kB" {
		return 0
	}
	kb, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return 0
	}
	return kb << 10
}
