package nonlinear

import "github.com/cryptflow-go/cryptflow/protocols/bitvec"

// Beaver bit triples (CrypTFlow2 App. A.1, A.2), produced in bulk.
//
// Regular triples: one (16 choose 1)-OT_2 gives two triples (d,e,f) and
// (d2,e2,f2) with d∧e = f: the receiver's choice is its shares
// (d,e,d2,e2) of both triples, and message c of the sender is
// (f_S ⊕ (d_S⊕c0)∧(e_S⊕c1)) | (f2_S ⊕ (d2_S⊕c2)∧(e2_S⊕c3))<<1, so the
// receiver learns f_R = f_S ⊕ d∧e. Correlated triples: one
// (8 choose 1)-OT_2 gives a pair (d,e,f), (d2,e,f2) sharing e; the choice is
// (d,d2,e).

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

// triplePool hands out consecutive triples of a bulk production.
type triplePool struct {
	reg     bitTriples
	corr    corrTriples
	rOff    int
	cOff    int
	regReq  regReq
	corrReq corrReq
}

// reserve returns the requests that produce nReg regular triples and nCorr
// correlated pairs into p (run them with runOTN before taking).
func (p *triplePool) reserve(st *stream, nReg, nCorr int) []otnReq {
	*p = triplePool{reg: bitTriples{n: nReg}, corr: corrTriples{n: nCorr}}
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
