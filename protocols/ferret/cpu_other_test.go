//go:build !unix

package ferret

func cpuSeconds() float64 { return 0 }
