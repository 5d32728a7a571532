//go:build !amd64 || purego

package prg

func haveAESNI() bool { return false }

func expandKey(*Seed, *[176]byte) { panic("prg: no assembly AES on this platform") }

func encryptBlocks(*[176]byte, *Block, *Block, int) {
	panic("prg: no assembly AES on this platform")
}

func tccr8(*[176]byte, *Block, *Block, int, uint64, uint64, uint64, uint64) {
	panic("prg: no assembly AES on this platform")
}

func hash256x8(*[176]byte, *Block, *Block, *Block, int, uint64, uint64, uint64, uint64, uint64, uint64) {
	panic("prg: no assembly AES on this platform")
}

func haveVAES() bool { return false }

func tccrWide(*[176]byte, []Block, []Block, Block, Tweak) {
	panic("prg: no VAES on this platform")
}

func hash256Wide(*[176]byte, []Block, []Block, []Block, Block, Block, Tweak) {
	panic("prg: no VAES on this platform")
}
