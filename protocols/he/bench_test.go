package he

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

const benchL = 37

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchProduct(b *testing.B, run func(p *pair, x0, x1 []uint64) (f0, f1 func() error), nx int, bytes int64, opt Options) {
	p := newPair(b, benchL, opt)
	rng := rand.New(rand.NewPCG(1, 1))
	x := ringtest.Values(p.r, rng, nx)
	x0, x1 := ringtest.Share(p.r, rng, x)
	f0, f1 := run(p, x0, x1)
	b.ResetTimer()
	before := p.bytes()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		testenv.MustBoth(b, f0, f1)
	}
	// CPU time of both parties (the machine may be shared: wall time is not the work).
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	if got := (p.bytes() - before) / int64(b.N); got != bytes {
		b.Fatalf("%d bytes per call, formula %d", got, bytes)
	}
	b.ReportMetric(float64(bytes)/1e6, "MB/op")
}

// BenchmarkConv56 is the 56×56×64 → 64 3×3 convolution with padding 1 (ResNet's first stage).
func BenchmarkConv56(b *testing.B) {
	g := ring.ConvGeom{N: 1, C: 64, H: 56, W: 56, M: 64, OH: 56, OW: 56, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}
	bytes, err := heplan.ConvBytes(g, benchL)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	benchProduct(b, func(p *pair, x0, x1 []uint64) (func() error, func() error) {
		w := ringtest.Values(p.r, rand.New(rand.NewPCG(2, 2)), g.M*g.C*g.KH*g.KW)
		d0, d1 := make([]uint64, g.N*g.M*g.OH*g.OW), make([]uint64, g.N*g.M*g.OH*g.OW)
		return func() error { return p.s0.Conv2D(ctx, d0, w, g, x0) }, func() error { return p.s1.Conv2D(ctx, d1, nil, g, x1) }
	}, g.N*g.C*g.H*g.W, bytes, Options{})
}

// BenchmarkFC1001x512 is a 1001×512 weight matrix times a 512-vector.
func BenchmarkFC1001x512(b *testing.B) {
	const m, k, n = 1001, 512, 1
	bytes, err := heplan.MatMulBytes(m, k, n, benchL)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	benchProduct(b, func(p *pair, x0, x1 []uint64) (func() error, func() error) {
		w := ringtest.Values(p.r, rand.New(rand.NewPCG(2, 2)), m*k)
		d0, d1 := make([]uint64, m*n), make([]uint64, m*n)
		return func() error { return p.s0.MatMul(ctx, d0, w, m, k, n, x0) }, func() error { return p.s1.MatMul(ctx, d1, nil, m, k, n, x1) }
	}, k*n, bytes, Options{})
}

// resnet50Convs are the distinct convolutions of ResNet50 v1 (ONNX light_resnet50, 224×224
// input) with how often each occurs (53 in all): input channels, input side, output channels,
// kernel side, stride, padding.
var resnet50Convs = []struct{ c, h, m, k, s, p, count int }{
	{3, 224, 64, 7, 2, 3, 1},
	{64, 56, 64, 1, 1, 0, 1},
	{64, 56, 64, 3, 1, 1, 3},
	{64, 56, 256, 1, 1, 0, 4},
	{256, 56, 64, 1, 1, 0, 2},
	{256, 56, 128, 1, 1, 0, 1},
	{128, 56, 128, 3, 2, 1, 1},
	{128, 28, 512, 1, 1, 0, 4},
	{256, 56, 512, 1, 2, 0, 1},
	{512, 28, 128, 1, 1, 0, 3},
	{128, 28, 128, 3, 1, 1, 3},
	{512, 28, 256, 1, 1, 0, 1},
	{256, 28, 256, 3, 2, 1, 1},
	{256, 14, 1024, 1, 1, 0, 6},
	{512, 28, 1024, 1, 2, 0, 1},
	{1024, 14, 256, 1, 1, 0, 5},
	{256, 14, 256, 3, 1, 1, 5},
	{1024, 14, 512, 1, 1, 0, 1},
	{512, 14, 512, 3, 2, 1, 1},
	{512, 7, 2048, 1, 1, 0, 3},
	{1024, 14, 2048, 1, 2, 0, 1},
	{2048, 7, 512, 1, 1, 0, 2},
	{512, 7, 512, 3, 1, 1, 2},
}

// resnet50Geom is the geometry of one of resnet50Convs.
func resnet50Geom(i int) ring.ConvGeom {
	r := resnet50Convs[i]
	o := (r.h+2*r.p-r.k)/r.s + 1
	return ring.ConvGeom{N: 1, C: r.c, H: r.h, W: r.h, M: r.m, OH: o, OW: o, KH: r.k, KW: r.k,
		SH: r.s, SW: r.s, PH: r.p, PW: r.p, DH: 1, DW: 1, Groups: 1}
}

// BenchmarkResNet50 runs each distinct ResNet50 convolution (one sub-benchmark per shape, named
// c<C>h<H>m<M>k<K>s<S>) at l = 37 as a first call (the weight plaintexts built in the call),
// which is what one inference does. Reports CPU seconds of both parties and MB per call.
func BenchmarkResNet50(b *testing.B) {
	for i, r := range resnet50Convs {
		g := resnet50Geom(i)
		b.Run(fmt.Sprintf("c%dh%dm%dk%ds%d", r.c, r.h, r.m, r.k, r.s), func(b *testing.B) {
			cost, err := heplan.ConvCost(g, benchL)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			benchProduct(b, func(p *pair, x0, x1 []uint64) (func() error, func() error) {
				w := ringtest.Values(p.r, rand.New(rand.NewPCG(2, 2)), g.M*g.C*g.KH*g.KW)
				d0, d1 := make([]uint64, g.N*g.M*g.OH*g.OW), make([]uint64, g.N*g.M*g.OH*g.OW)
				return func() error { return p.s0.Conv2D(ctx, d0, w, g, x0) }, func() error { return p.s1.Conv2D(ctx, d1, nil, g, x1) }
			}, g.N*g.C*g.H*g.W, cost.Bytes, Options{CacheBytes: -1})
			b.ReportMetric(float64(cost.Uploads), "uploads")
			b.ReportMetric(float64(cost.Replies), "replies")
			b.ReportMetric(float64(cost.Weights), "wpolys")
		})
	}
}
