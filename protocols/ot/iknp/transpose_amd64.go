//go:build amd64 && !purego

package iknp

import (
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"golang.org/x/sys/cpu"
)

// transpose128AVX512 is transpose128 with 512-bit registers.
//
//go:noescape
func transpose128AVX512(m *[128]prg.Block)

// haveAVX512 reports whether AVX-512F may be used: CPU support and the OS
// saving the opmask and ZMM state (golang.org/x/sys/cpu checks OSXSAVE and
// XCR0). The kernel uses no AVX-512 subset beyond F.
func haveAVX512() bool { return cpu.X86.HasAVX512F }
