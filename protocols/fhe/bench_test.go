package fhe

import (
	"testing"

	"github.com/tuneinsight/lattigo/v6/schemes/bgv"
)

// benchSetup is one CRT component at LoLa CIFAR-10's parameters (N = 2^15, seven 60-bit
// levels, three 61-bit key-switching primes, t = 2146959361), one key (rotation by 1), a fresh
// ciphertext and a diagonal.
func benchSetup(b *testing.B) (*Evaluator, *Params, *Vector, []uint64) {
	b.Helper()
	p, err := NewParams(15, []uint64{2146959361}, []int{60, 60, 60, 60, 60, 60, 60}, []int{61, 61, 61}, 1)
	if err != nil {
		b.Fatal(err)
	}
	c, err := NewClient(p)
	if err != nil {
		b.Fatal(err)
	}
	k, err := c.Keys([]int{1})
	if err != nil {
		b.Fatal(err)
	}
	e, err := NewEvaluator(p, k, 1)
	if err != nil {
		b.Fatal(err)
	}
	x, err := c.Encrypt([][]uint64{make([]uint64, p.Slots())}, p.Slots(), 1)
	if err != nil {
		b.Fatal(err)
	}
	w := make([]uint64, p.Slots())
	for i := range w {
		w[i] = uint64(i * 7 % 1000)
	}
	return e, p, x, w
}

// BenchmarkDiagonalProduct is the unit of the diagonal method at the fresh level: encode one
// diagonal and multiply-accumulate it (linearTerm's inner loop).
func BenchmarkDiagonalProduct(b *testing.B) {
	e, p, x, w := benchSetup(b)
	ct := x.Ct[0]
	acc := bgv.NewCiphertext(p.comp[0], 1, ct.Level())
	acc.Scale = ct.Scale
	b.ResetTimer()
	for range b.N {
		pt, err := e.encode(0, w, ct.Level(), p.comp[0].DefaultScale())
		if err != nil {
			b.Fatal(err)
		}
		if err := e.ev[0].MulThenAdd(ct, pt, acc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiagonalProductReused is BenchmarkDiagonalProduct into one reused plaintext, as
// linearTerm does.
func BenchmarkDiagonalProductReused(b *testing.B) {
	e, p, x, w := benchSetup(b)
	ct := x.Ct[0]
	acc := bgv.NewCiphertext(p.comp[0], 1, ct.Level())
	acc.Scale = ct.Scale
	pt := bgv.NewPlaintext(p.comp[0], ct.Level())
	b.ResetTimer()
	for range b.N {
		if err := e.encodeInto(0, w, p.comp[0].DefaultScale(), pt); err != nil {
			b.Fatal(err)
		}
		if err := e.ev[0].MulThenAdd(ct, pt, acc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRotation is one key rotation (key switching) at the fresh level.
func BenchmarkRotation(b *testing.B) {
	e, _, x, _ := benchSetup(b)
	b.ResetTimer()
	for range b.N {
		if _, err := e.rotate(0, x.Ct[0], 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiagonalProductMont is the diagonal loop's unit as linearTerm now runs it without the
// cache: encodeMont (no t^-1 and t scalings) and two Montgomery multiply-accumulates.
func BenchmarkDiagonalProductMont(b *testing.B) {
	e, p, x, w := benchSetup(b)
	ct := x.Ct[0]
	acc := bgv.NewCiphertext(p.comp[0], 1, ct.Level())
	ringQ := p.comp[0].RingQ().AtLevel(ct.Level())
	pt := ringQ.NewPoly()
	b.ResetTimer()
	for range b.N {
		if err := e.encodeMont(0, w, ct.Level(), pt); err != nil {
			b.Fatal(err)
		}
		for c := range acc.Value {
			ringQ.MulCoeffsMontgomeryThenAdd(ct.Value[c], pt, acc.Value[c])
		}
	}
}

// BenchmarkDiagonalProductCached is the unit with the diagonal already encoded (plainCache): the
// two Montgomery multiply-accumulates alone.
func BenchmarkDiagonalProductCached(b *testing.B) {
	e, p, x, w := benchSetup(b)
	ct := x.Ct[0]
	acc := bgv.NewCiphertext(p.comp[0], 1, ct.Level())
	ringQ := p.comp[0].RingQ().AtLevel(ct.Level())
	pt := ringQ.NewPoly()
	if err := e.encodeMont(0, w, ct.Level(), pt); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		for c := range acc.Value {
			ringQ.MulCoeffsMontgomeryThenAdd(ct.Value[c], pt, acc.Value[c])
		}
	}
}
