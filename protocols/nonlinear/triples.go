package nonlinear

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
)

// Beaver bit triples (CrypTFlow2 App. A.1, A.2), produced in bulk.
//
// Regular triples: one (16 choose 1)-OT_2 gives two triples (d,e,f) and
// (d2,e2,f2) with d∧e = f: the receiver's choice is its shares
// (d,e,d2,e2) of both triples, and message c of the sender is
// (f_S ⊕ (d_S⊕c0)∧(e_S⊕c1)) | (f2_S ⊕ (d2_S⊕c2)∧(e2_S⊕c3))<<1, so the
// receiver learns f_R = f_S ⊕ d∧e. Correlated triples: one
// (8 choose 1)-OT_2 gives a pair (d,e,f), (d2,e,f2) sharing e; the choice is
// (d,d2,e).

// BitTriples are this party's shares of n Beaver bit triples d∧e = f, packed.
type BitTriples struct {
	N       int
	D, E, F []uint64
}

// CorrelatedBitTriples are this party's shares of n correlated triple pairs
// (d, e, f), (d2, e, f2) with d∧e = f and d2∧e = f2, packed.
type CorrelatedBitTriples struct {
	N               int
	D, D2, E, F, F2 []uint64
}

// BitTriples produces n regular Beaver bit triples (two per
// (16 choose 1)-OT_2, App. A.1): λ/2 + 16 bits each.
func (s *Session) BitTriples(ctx context.Context, n int) (BitTriples, error) {
	const op = "BitTriples"
	if err := s.usable(op); err != nil {
		return BitTriples{}, err
	}
	if n < 0 {
		return BitTriples{}, fmt.Errorf("nonlinear: %s: negative count %d", op, n)
	}
	t := BitTriples{N: n, D: make([]uint64, bitvec.Words(n)), E: make([]uint64, bitvec.Words(n)), F: make([]uint64, bitvec.Words(n))}
	st := s.streams[0]
	err := st.chunks(ctx, n, st.chunkSize(8), func(ctx context.Context, st *stream, a, b int) error {
		pool := &triplePool{}
		if err := st.runOTN(ctx, pool.reserve(st, b-a, 0)...); err != nil {
			return err
		}
		d, e, f := pool.takeReg(b - a)
		copy(t.D[a/64:], d)
		copy(t.E[a/64:], e)
		copy(t.F[a/64:], f)
		return nil
	})
	if err != nil {
		return BitTriples{}, s.fail(ctx, op, err)
	}
	return t, nil
}

// CorrelatedBitTriples produces n correlated pairs (one
// (8 choose 1)-OT_2 each, App. A.2): 2λ + 16 bits per pair.
func (s *Session) CorrelatedBitTriples(ctx context.Context, n int) (CorrelatedBitTriples, error) {
	const op = "CorrelatedBitTriples"
	if err := s.usable(op); err != nil {
		return CorrelatedBitTriples{}, err
	}
	if n < 0 {
		return CorrelatedBitTriples{}, fmt.Errorf("nonlinear: %s: negative count %d", op, n)
	}
	w := bitvec.Words(n)
	t := CorrelatedBitTriples{N: n, D: make([]uint64, w), D2: make([]uint64, w), E: make([]uint64, w),
		F: make([]uint64, w), F2: make([]uint64, w)}
	st := s.streams[0]
	err := st.chunks(ctx, n, st.chunkSize(8), func(ctx context.Context, st *stream, a, b int) error {
		pool := &triplePool{}
		if err := st.runOTN(ctx, pool.reserve(st, 0, b-a)...); err != nil {
			return err
		}
		d, d2, e, f, f2 := pool.takeCorr(b - a)
		for _, c := range []struct{ dst, src []uint64 }{{t.D, d}, {t.D2, d2}, {t.E, e}, {t.F, f}, {t.F2, f2}} {
			copy(c.dst[a/64:], c.src)
		}
		return nil
	})
	if err != nil {
		return CorrelatedBitTriples{}, s.fail(ctx, op, err)
	}
	return t, nil
}

// bitTriples holds this party's shares of n regular triples, packed.
type bitTriples struct {
	n       int
	d, e, f []uint64
}

// corrTriples holds this party's shares of n correlated pairs, packed.
type corrTriples struct {
	n               int
	d, d2, e, f, f2 []uint64
}

// regTable[s] lists the 16 sender messages for the sender's bits
// s = d | e<<1 | d2<<2 | e2<<3 | f<<4 | f2<<5.
var regTable = func() (t [64][16]uint8) {
	for s := 0; s < 64; s++ {
		d, e, d2, e2, f, f2 := s&1, s>>1&1, s>>2&1, s>>3&1, s>>4&1, s>>5&1
		for c := 0; c < 16; c++ {
			b0 := f ^ ((d ^ c&1) & (e ^ c>>1&1))
			b1 := f2 ^ ((d2 ^ c>>2&1) & (e2 ^ c>>3&1))
			t[s][c] = uint8(b0 | b1<<1)
		}
	}
	return t
}()

// corrTable[s] lists the 8 sender messages for s = d | d2<<1 | e<<2 | f<<3 | f2<<4.
var corrTable = func() (t [32][8]uint8) {
	for s := 0; s < 32; s++ {
		d, d2, e, f, f2 := s&1, s>>1&1, s>>2&1, s>>3&1, s>>4&1
		for c := 0; c < 8; c++ {
			b0 := f ^ ((d ^ c&1) & (e ^ c>>2&1))
			b1 := f2 ^ ((d2 ^ c>>1&1) & (e ^ c>>2&1))
			t[s][c] = uint8(b0 | b1<<1)
		}
	}
	return t
}()

// regReq produces n regular triples from ⌈n/2⌉ (16 choose 1)-OT_2:
// instance i makes triples i and i+h (h = ⌈n/2⌉).
type regReq struct {
	st  *stream
	out *bitTriples
}

func (q *regReq) kind() (int, int) { return 16, 2 }
func (q *regReq) size() int        { return (q.out.n + 1) / 2 }

func (q *regReq) alloc() {
	t := q.out
	t.d, t.e = q.st.randBits(t.n), q.st.randBits(t.n)
	t.f = make([]uint64, bitvec.Words(t.n))
}

// pairBits returns bit i and bit i+h of v (0 for the missing partner of
// an odd count).
func pairBits(v []uint64, i, h, n int) (uint64, uint64) {
	a := bitvec.Bit(v, i)
	var b uint64
	if i+h < n {
		b = bitvec.Bit(v, i+h)
	}
	return a, b
}

func (q *regReq) send(msgs []uint64) {
	q.alloc()
	t := q.out
	copy(t.f, q.st.randBits(t.n))
	h := q.size()
	for i := 0; i < h; i++ {
		d, d2 := pairBits(t.d, i, h, t.n)
		e, e2 := pairBits(t.e, i, h, t.n)
		f, f2 := pairBits(t.f, i, h, t.n)
		row := &regTable[d|e<<1|d2<<2|e2<<3|f<<4|f2<<5]
		m := msgs[i*16 : i*16+16 : i*16+16]
		for c := range m {
			m[c] = uint64(row[c])
		}
	}
}

func (q *regReq) choose(c []uint8) {
	q.alloc()
	t := q.out
	h := q.size()
	for i := 0; i < h; i++ {
		d, d2 := pairBits(t.d, i, h, t.n)
		e, e2 := pairBits(t.e, i, h, t.n)
		c[i] = uint8(d | e<<1 | d2<<2 | e2<<3)
	}
}

func (q *regReq) receive(out []uint64) {
	t := q.out
	h := q.size()
	for i := 0; i < h; i++ {
		t.f[i>>6] |= (out[i] & 1) << (i & 63)
		if j := i + h; j < t.n {
			t.f[j>>6] |= (out[i] >> 1 & 1) << (j & 63)
		}
	}
}

// corrReq produces n correlated pairs from n (8 choose 1)-OT_2.
type corrReq struct {
	st  *stream
	out *corrTriples
}

func (q *corrReq) kind() (int, int) { return 8, 2 }
func (q *corrReq) size() int        { return q.out.n }

func (q *corrReq) alloc() {
	t := q.out
	t.d, t.d2, t.e = q.st.randBits(t.n), q.st.randBits(t.n), q.st.randBits(t.n)
}

func (q *corrReq) send(msgs []uint64) {
	q.alloc()
	t := q.out
	t.f, t.f2 = q.st.randBits(t.n), q.st.randBits(t.n)
	for i := 0; i < t.n; i++ {
		s := bitvec.Bit(t.d, i) | bitvec.Bit(t.d2, i)<<1 | bitvec.Bit(t.e, i)<<2 | bitvec.Bit(t.f, i)<<3 | bitvec.Bit(t.f2, i)<<4
		row := &corrTable[s]
		m := msgs[i*8 : i*8+8 : i*8+8]
		for c := range m {
			m[c] = uint64(row[c])
		}
	}
}

func (q *corrReq) choose(c []uint8) {
	q.alloc()
	t := q.out
	for i := 0; i < t.n; i++ {
		c[i] = uint8(bitvec.Bit(t.d, i) | bitvec.Bit(t.d2, i)<<1 | bitvec.Bit(t.e, i)<<2)
	}
}

func (q *corrReq) receive(out []uint64) {
	t := q.out
	t.f, t.f2 = make([]uint64, bitvec.Words(t.n)), make([]uint64, bitvec.Words(t.n))
	bitvec.PackBit(t.f, out, 0)
	bitvec.PackBit(t.f2, out, 1)
}

// Triples from random OT (the silent-OT plan). A random OT_2 gives the
// sender random m0, m1 and the receiver a random choice bit c and m_c; with
// x = m0 ⊕ m1, the sender's m0 and the receiver's m_c are XOR shares of c·x.
// Two batches run, one with each party as receiver, and every party takes
// its triple shares from its own outputs: regular triple i uses instance i
// of both batches, with d = the party's choice bit c (as receiver) and
// e = bit 0 of its x (as sender), so the two batches share the cross terms
// d_P·e_Q and d_Q·e_P, and f = d∧e ⊕ (bit 0 of both shares). Correlated pair
// j uses instance nReg + j: e = c, (d, d2) = the two bits of x, and
// (f, f2) = (d∧e, d2∧e) ⊕ both 2-bit shares. On a silent source this sends
// nothing beyond the refills of 2 COTs per triple (or pair).

// rotTripleReq produces a pool's triples from two batches of random OT_2.
// It is routed by runOTN on its kind (N = 0); the otnReq methods are never
// called for it.
type rotTripleReq struct {
	reg  *bitTriples
	corr *corrTriples
}

func (q *rotTripleReq) kind() (int, int) { return 0, 2 }
func (q *rotTripleReq) size() int        { return q.reg.n + q.corr.n }
func (q *rotTripleReq) send([]uint64)    {}
func (q *rotTripleReq) choose([]uint8)   {}
func (q *rotTripleReq) receive([]uint64) {}

// fromROT sets the triples from this party's outputs: m0, m1 as the sender
// of one batch, c (packed) and m as the receiver of the other (size()
// instances each).
func (q *rotTripleReq) fromROT(m0, m1, c, m []uint64) {
	t := q.reg
	w := bitvec.Words(t.n)
	t.d, t.e, t.f = make([]uint64, w), make([]uint64, w), make([]uint64, w)
	for i := 0; i < t.n; i++ {
		x := (m0[i] ^ m1[i]) & 1
		ci := bitvec.Bit(c, i)
		f := ci&x ^ (m0[i]^m[i])&1
		t.d[i>>6] |= ci << (i & 63)
		t.e[i>>6] |= x << (i & 63)
		t.f[i>>6] |= f << (i & 63)
	}
	u := q.corr
	w = bitvec.Words(u.n)
	u.d, u.d2, u.e, u.f, u.f2 = make([]uint64, w), make([]uint64, w), make([]uint64, w), make([]uint64, w), make([]uint64, w)
	for j := 0; j < u.n; j++ {
		i := t.n + j
		x := m0[i] ^ m1[i]
		e := bitvec.Bit(c, i)
		sh := m0[i] ^ m[i]
		d, d2 := x&1, x>>1&1
		u.d[j>>6] |= d << (j & 63)
		u.d2[j>>6] |= d2 << (j & 63)
		u.e[j>>6] |= e << (j & 63)
		u.f[j>>6] |= (d&e ^ sh&1) << (j & 63)
		u.f2[j>>6] |= (d2&e ^ sh>>1&1) << (j & 63)
	}
}

// triplePool hands out consecutive triples of a bulk production.
type triplePool struct {
	reg     bitTriples
	corr    corrTriples
	rOff    int
	cOff    int
	regReq  regReq
	corrReq corrReq
	rotReq  rotTripleReq
	dealt   dealtReq
}

// reserve returns the requests that produce nReg regular triples and nCorr
// correlated pairs into p (run them with runOTN before taking): 1-out-of-N
// OTs, or random OTs when the stream's plan says so.
func (p *triplePool) reserve(st *stream, nReg, nCorr int) []otnReq {
	*p = triplePool{reg: bitTriples{n: nReg}, corr: corrTriples{n: nCorr}}
	if st.dealer != nil {
		p.dealt = dealtReq{st: st, reg: &p.reg, corr: &p.corr}
		return []otnReq{&p.dealt}
	}
	if st.rotTriples {
		p.rotReq = rotTripleReq{reg: &p.reg, corr: &p.corr}
		return []otnReq{&p.rotReq}
	}
	p.regReq = regReq{st: st, out: &p.reg}
	p.corrReq = corrReq{st: st, out: &p.corr}
	return []otnReq{&p.regReq, &p.corrReq}
}

// hasReg reports whether n more regular triples are left.
func (p *triplePool) hasReg(n int) bool { return p.rOff+n <= p.reg.n }

// hasCorr reports whether n more correlated pairs are left.
func (p *triplePool) hasCorr(n int) bool { return p.cOff+n <= p.corr.n }

// takeReg returns the next n regular triples.
func (p *triplePool) takeReg(n int) (d, e, f []uint64) {
	d, e, f = make([]uint64, bitvec.Words(n)), make([]uint64, bitvec.Words(n)), make([]uint64, bitvec.Words(n))
	bitvec.Extract(d, p.reg.d, p.rOff, n)
	bitvec.Extract(e, p.reg.e, p.rOff, n)
	bitvec.Extract(f, p.reg.f, p.rOff, n)
	p.rOff += n
	return
}

// takeCorr returns the next n correlated pairs.
func (p *triplePool) takeCorr(n int) (d, d2, e, f, f2 []uint64) {
	mk := func(src []uint64) []uint64 {
		v := make([]uint64, bitvec.Words(n))
		bitvec.Extract(v, src, p.cOff, n)
		return v
	}
	d, d2, e, f, f2 = mk(p.corr.d), mk(p.corr.d2), mk(p.corr.e), mk(p.corr.f), mk(p.corr.f2)
	p.cOff += n
	return
}
