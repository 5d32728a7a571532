//go:build amd64 && !purego

package ferret

//go:noescape
func lpnColsZ(w *uint32, n int, k uint64)

//go:noescape
func lpnXorX(out *[2]uint64, base *[2]uint64, idx *uint32, rows int)

// haveLPNKernels reports whether the LPN step can use its assembly
// kernels: the VAES/AVX-512F index kernel and the gathers.
func haveLPNKernels() bool { return haveVAESZ() }
