//go:build !amd64 || purego

package iknp

import "github.com/cryptflow-go/cryptflow/protocols/prg"

func haveAVX512() bool { return false }

func transpose128AVX512(*[128]prg.Block) { panic("ot: no AVX-512 transpose on this platform") }
