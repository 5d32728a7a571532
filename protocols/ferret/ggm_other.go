//go:build !amd64 || purego

package ferret

func haveVAESZ() bool { return false }

func ggmLevelZ(*[2][176]byte, *[2]uint64, int) { panic("ferret: no VAES kernel on this platform") }

func haveLPNKernels() bool { return false }

func lpnColsZ(*uint32, int, uint64) { panic("ferret: no LPN kernel on this platform") }

func lpnXorX(*[2]uint64, *[2]uint64, *uint32, int) { panic("ferret: no LPN kernel on this platform") }
