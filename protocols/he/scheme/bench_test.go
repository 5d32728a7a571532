package scheme

import (
	"testing"
)

const benchL = 37

func BenchmarkEncrypt(b *testing.B) {
	p, err := ParamsFor(benchL)
	if err != nil {
		b.Fatal(err)
	}
	en, err := NewEncryptor(p, GenSecretKey(p))
	if err != nil {
		b.Fatal(err)
	}
	n := p.N()
	m := make([]uint64, n)
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = int32(i)
		m[i] = uint64(i) * 0x9e3779b97f4a7c15
	}
	buf := make([]byte, 0, p.UploadBytes())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf = en.Encrypt(buf[:0], pos, pos, m)
	}
}

// BenchmarkCtPt is one ciphertext × plaintext product in the NTT domain, accumulated (both
// components, all primes of Q).
func BenchmarkCtPt(b *testing.B) {
	p, err := ParamsFor(benchL)
	if err != nil {
		b.Fatal(err)
	}
	ct, acc, w := p.NewCiphertext(), p.NewCiphertext(), p.NewPlaintext()
	for i := range ct.c0.Coeffs {
		for j := range ct.c0.Coeffs[i] {
			ct.c0.Coeffs[i][j], ct.c1.Coeffs[i][j], w.poly.Coeffs[i][j] = uint64(j)%p.Q[i], uint64(3*j)%p.Q[i], uint64(7*j)%p.Q[i]
		}
	}
	ev, err := NewEvaluator(p, &PublicKey{p0: p.rq.NewPoly(), p1: p.rq.NewPoly()})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ev.MulAdd(acc, ct, w)
	}
}

// BenchmarkCtPtWide is BenchmarkCtPt with the unreduced 128-bit accumulator.
func BenchmarkCtPtWide(b *testing.B) {
	p, err := ParamsFor(benchL)
	if err != nil {
		b.Fatal(err)
	}
	ct, w := p.NewCiphertext(), p.NewPlaintext()
	acc := p.NewAccumulator()
	for i := range ct.c0.Coeffs {
		for j := range ct.c0.Coeffs[i] {
			ct.c0.Coeffs[i][j], ct.c1.Coeffs[i][j], w.poly.Coeffs[i][j] = uint64(j)%p.Q[i], uint64(3*j)%p.Q[i], uint64(7*j)%p.Q[i]
		}
	}
	ev, err := NewEvaluator(p, &PublicKey{p0: p.rq.NewPoly(), p1: p.rq.NewPoly()})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ev.MulAddWide(acc, ct, w)
	}
}
