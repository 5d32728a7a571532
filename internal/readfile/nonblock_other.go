//go:build !unix

package readfile

const nonblock = 0
