//go:build unix

package readfile

import "syscall"

// nonblock makes opening a named pipe return at once instead of waiting for a writer.
const nonblock = syscall.O_NONBLOCK
