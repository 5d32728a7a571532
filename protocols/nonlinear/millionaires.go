package nonlinear

import (
	"context"
	"errors"
	"fmt"
	"math/bits"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
)

// Millionaires' protocol Π_MILL^{b,m} (CrypTFlow2 Alg. 1 with the general
// case and the optimisations of §3.1.1).
//
// The parties hold b-bit x and y (the "X party" and the "Y party") and learn
// boolean shares of 1{x < y}. The inputs are cut into q = ⌈b/m⌉ digits, the
// lowest q−1 of m bits and the top one of r = b − (q−1)m bits. For every
// digit a 1-out-of-2^width OT gives shares of lt_j = 1{x_j < y_j} and
// eq_j = 1{x_j = y_j} (both in one OT_2 message: "merged leaves"); digit 0
// needs only lt (OT_1). Either party can be the OT sender of a digit: the
// sender draws its shares at random and offers, for every possible digit k of
// the receiver, its shares XOR the comparison of its own digit with k.
//
// The digits are then combined pairwise, level by level, with
// lt = lt_hi ⊕ (lt_lo ∧ eq_hi) and eq = eq_lo ∧ eq_hi; at each level nodes
// (2j, 2j+1) are combined and an odd last node passes through, so the tree
// has L = ⌈log2 q⌉ levels and digit 0 is combined at every level. The node
// holding digit 0 needs no equality ("no equality on the least significant
// branch"), so its combination is one AND with a regular triple; every other
// combination is two ANDs sharing the input eq_hi, done with one correlated
// triple pair. Per comparison: 1 (2^m choose 1)-OT_1, q−2 (2^m choose 1)-OT_2,
// 1 (2^r choose 1)-OT_2, L regular ANDs and q−1−L correlated pairs — the
// counts of §3.1.2. Truncation uses a variant whose tree also yields the
// comparison of the low s bits (newSplitGroup).

// millWords bounds the OT message words the sender builds per comparison of
// b-bit values with leaf width m (digit OTs plus triples).
func millWords(b, m int) int {
	if b == 0 {
		return 0
	}
	q := (b + m - 1) / m
	r := b - (q-1)*m
	if q == 1 {
		return 1 << r
	}
	L := bits.Len(uint(q - 1))
	return (q-1)<<m + 1<<r + (16*L+1)/2 + 8*(q-1-L)
}

// Millionaires computes boolean shares of 1{x < y} for n = len(v)
// comparisons of b-bit unsigned integers, where party 0 holds x = v and
// party 1 holds y = v (values are taken mod 2^b). dst receives this party's
// shares, packed (bitvec.Words(n) words; see the package documentation).
// 1 ≤ b ≤ 64. Communication per comparison, λ = 128, M = 2^m, q = ⌈b/m⌉,
// r = b−(q−1)m, L = ⌈log2 q⌉ (q ≥ 2):
// λ(4q−L−2) + M(2q−3) + 2·2^r + 22(q−1) − 2L bits (CrypTFlow2 §3.1.2).
func (s *Session) Millionaires(ctx context.Context, dst, v []uint64, b int) error {
	const op = "Millionaires"
	if err := s.usable(op); err != nil {
		return err
	}
	n := len(v)
	if b < 1 || b > 64 {
		return fmt.Errorf("nonlinear: %s: bit width %d outside 1..64", op, b)
	}
	if err := s.checkBits(op, "dst", dst, n); err != nil {
		return err
	}
	mask := bitvec.Mask(b)
	return s.run(ctx, op, s.parts(n, 64), func(ctx context.Context, st *stream, lo, hi int) error {
		return st.chunks(ctx, hi-lo, st.chunkSize(millWords(b, st.m)), func(ctx context.Context, st *stream, a, c int) error {
			x := make([]uint64, c-a)
			for i := range x {
				x[i] = v[lo+a+i] & mask
			}
			g := newMillGroup(x, b, st.m, st.party == 0)
			if err := st.mill(ctx, []*millGroup{g}, nil, nil); err != nil {
				return err
			}
			copy(dst[(lo+a)/64:], g.res)
			return nil
		})
	})
}

// treeOp makes one node of the next level from nodes of the current one:
// hi < 0 passes node lo through; otherwise lo (less significant) and hi are
// combined. Node 0 always holds digit 0, so combining it needs only lt (one
// AND with a regular triple); any other combination needs lt and eq (two
// ANDs sharing eq_hi, one correlated pair).
type treeOp struct{ lo, hi int }

// millGroup is a batch of n comparisons 1{x < y} of b-bit values.
type millGroup struct {
	n      int
	v      []uint64 // this party's values (x or y), below 2^b
	isX    bool     // this party holds x
	offs   []int    // digit bit offsets, least significant first
	widths []int    // digit widths
	levels [][]treeOp
	// capLevel ≥ 0 marks a split comparison: after that many levels node 0
	// holds the comparison of the low segment of digits, kept in low.
	capLevel int
	lt, eq   [][]uint64 // current nodes, n bits each
	res      []uint64   // shares of 1{x < y} after the protocol
	low      []uint64   // shares of the low segment's comparison
}

// digitsOf cuts b bits starting at bit off into digits of m bits (the top
// one narrower).
func digitsOf(off, b, m int) (offs, widths []int) {
	for b > 0 {
		w := min(m, b)
		offs, widths = append(offs, off), append(widths, w)
		off, b = off+w, b-w
	}
	return
}

// newMillGroup compares b-bit values with leaf width m: digits of m bits
// from the least significant end, combined pairwise level by level.
func newMillGroup(v []uint64, b, m int, isX bool) *millGroup {
	g := &millGroup{n: len(v), v: v, isX: isX, capLevel: -1}
	g.offs, g.widths = digitsOf(0, b, m)
	g.levels, _ = planTree([]int{len(g.offs)})
	return g
}

// newSplitGroup compares b-bit values (b > s ≥ 1) and also yields, in low,
// the comparison of their low s bits: the digits of the low s bits are
// reduced to one node (while the high digits are reduced among themselves)
// before anything else is combined with it, so that node is the low
// comparison.
func newSplitGroup(v []uint64, b, s, m int, isX bool) *millGroup {
	g := &millGroup{n: len(v), v: v, isX: isX}
	lo, lw := digitsOf(0, s, m)
	hi, hw := digitsOf(s, b-s, m)
	g.offs, g.widths = append(lo, hi...), append(lw, hw...)
	g.levels, g.capLevel = planTree([]int{len(lo), len(hi)})
	return g
}

// planTree plans the combination of segments of q_k digits: each segment is
// reduced pairwise (an odd last node passing through) until segment 0 is
// one node; from then on all nodes form one sequence reduced the same way.
// Node 0 then keeps absorbing its neighbour, so the path from digit 0 to
// the root — whose combinations need only a regular AND — stays as long as
// possible. It returns the levels and the level after which segment 0 is
// one node (−1 for a single segment).
func planTree(segs []int) ([][]treeOp, int) {
	capLevel := -1
	if len(segs) > 1 && segs[0] == 1 {
		capLevel = 0
		segs = []int{sum(segs)}
	}
	var levels [][]treeOp
	for sum(segs) > 1 {
		var ops []treeOp
		var next []int
		base := 0
		for _, q := range segs {
			for j := 0; j+1 < q; j += 2 {
				ops = append(ops, treeOp{base + j, base + j + 1})
			}
			if q%2 == 1 {
				ops = append(ops, treeOp{base + q - 1, -1})
			}
			next = append(next, (q+1)/2)
			base += q
		}
		levels = append(levels, ops)
		segs = next
		if capLevel < 0 && len(segs) > 1 && segs[0] == 1 {
			capLevel = len(levels)
			segs = []int{sum(segs)}
		}
	}
	return levels, capLevel
}

func sum(v []int) int {
	t := 0
	for _, x := range v {
		t += x
	}
	return t
}

// depth is the number of AND levels.
func (g *millGroup) depth() int { return len(g.levels) }

// triples returns the regular triples and correlated pairs the group needs.
func (g *millGroup) triples() (reg, corr int) {
	for _, ops := range g.levels {
		for _, op := range ops {
			switch {
			case op.hi < 0:
			case op.lo == 0:
				reg += g.n
			default:
				corr += g.n
			}
		}
	}
	return
}

// levelBits is the number of bits one party sends for the group at level i
// (1-based).
func (g *millGroup) levelBits(i int) int {
	if i > len(g.levels) {
		return 0
	}
	t := 0
	for _, op := range g.levels[i-1] {
		switch {
		case op.hi < 0:
		case op.lo == 0:
			t += 2 * g.n
		default:
			t += 3 * g.n
		}
	}
	return t
}

// leafReqs returns the OT requests of the group's digits, one per kind.
func (g *millGroup) leafReqs(st *stream) []otnReq {
	q := len(g.offs)
	g.lt = make([][]uint64, q)
	g.eq = make([][]uint64, q)
	if q == 0 || g.n == 0 {
		return nil
	}
	var reqs []otnReq
	byKind := map[[2]int]*leafReq{}
	for j, w := range g.widths {
		l := 2
		if j == 0 {
			l = 1 // digit 0 needs no equality
		}
		k := [2]int{1 << w, l}
		r := byKind[k]
		if r == nil {
			r = &leafReq{st: st, g: g, N: 1 << w, l: l}
			byKind[k] = r
			reqs = append(reqs, r)
		}
		r.leaves = append(r.leaves, j)
	}
	return reqs
}

// leafReq is the digit OTs of some digits of a group (all of one width).
type leafReq struct {
	st     *stream
	g      *millGroup
	leaves []int
	N, l   int
}

func (q *leafReq) kind() (int, int) { return q.N, q.l }
func (q *leafReq) size() int        { return len(q.leaves) * q.g.n }

func (q *leafReq) send(msgs []uint64) {
	g, N := q.g, q.N
	// For small N the N messages of every (digit, lt share, eq share) are
	// precomputed and copied.
	var table []uint64
	if N <= 64 {
		table = make([]uint64, N*4*N)
		for s := 0; s < N; s++ {
			for ac := uint64(0); ac < 4; ac++ {
				leafMsgs(table[(s*4+int(ac))*N:][:N], s, ac&1, ac&2, g.isX)
			}
		}
	}
	for k, j := range q.leaves {
		lt := q.st.randBits(g.n)
		g.lt[j] = lt
		var eq []uint64
		if q.l == 2 {
			eq = q.st.randBits(g.n)
			g.eq[j] = eq
		}
		shift := uint(g.offs[j])
		mask := uint64(N - 1)
		base := msgs[k*g.n*N : (k+1)*g.n*N]
		for e := 0; e < g.n; e++ {
			s := int(g.v[e] >> shift & mask)
			a := bitvec.Bit(lt, e)
			var c uint64
			if eq != nil {
				c = bitvec.Bit(eq, e) << 1
			}
			m := base[e*N : e*N+N : e*N+N]
			if table != nil {
				copy(m, table[(s*4+int(a|c))*N:])
			} else {
				leafMsgs(m, s, a, c, g.isX)
			}
		}
	}
}

// sendWords is send with each instance's N messages packed in one word (N·l ≤ 64, so N ≤ 32).
func (q *leafReq) sendWords(words []uint64) {
	g, N, l := q.g, q.N, q.l
	// The packed messages of every (digit, lt share, eq share).
	var row [64]uint64
	table := make([]uint64, N*4)
	for s := 0; s < N; s++ {
		for ac := uint64(0); ac < 4; ac++ {
			leafMsgs(row[:N], s, ac&1, ac&2, g.isX)
			var w uint64
			for v := N - 1; v >= 0; v-- {
				w = w<<l | row[v]&bitvec.Mask(l)
			}
			table[s*4+int(ac)] = w
		}
	}
	for k, j := range q.leaves {
		lt := q.st.randBits(g.n)
		g.lt[j] = lt
		var eq []uint64
		if l == 2 {
			eq = q.st.randBits(g.n)
			g.eq[j] = eq
		}
		shift := uint(g.offs[j])
		mask := uint64(N - 1)
		out := words[k*g.n : (k+1)*g.n]
		for e := range out {
			s := int(g.v[e] >> shift & mask)
			a := bitvec.Bit(lt, e)
			var c uint64
			if eq != nil {
				c = bitvec.Bit(eq, e) << 1
			}
			out[e] = table[s*4+int(a|c)]
		}
	}
}

// leafMsgs writes the sender's messages of one digit: for every receiver
// digit k, (lt share ⊕ cmp) | (eq share ⊕ 1{k = s})<<1, where the sender's
// digit is s, its shares are a (lt) and c (eq, already shifted to bit 1),
// and cmp is 1{s < k} for the sender holding x, 1{k < s} for the one
// holding y.
func leafMsgs(m []uint64, s int, a, c uint64, isX bool) {
	below, at, above := a|c, a|c^2, a^1|c
	if !isX {
		below, above = a^1|c, a|c
	}
	for i := 0; i < s; i++ {
		m[i] = below
	}
	m[s] = at
	for i := s + 1; i < len(m); i++ {
		m[i] = above
	}
}

func (q *leafReq) choose(c []uint8) {
	g := q.g
	mask := uint64(q.N - 1)
	for k, j := range q.leaves {
		shift := uint(g.offs[j])
		cc := c[k*g.n : (k+1)*g.n]
		for e := range cc {
			cc[e] = uint8(g.v[e] >> shift & mask)
		}
	}
}

func (q *leafReq) receive(out []uint64) {
	g := q.g
	for k, j := range q.leaves {
		o := out[k*g.n : (k+1)*g.n]
		g.lt[j] = make([]uint64, bitvec.Words(g.n))
		bitvec.PackBit(g.lt[j], o, 0)
		if q.l == 2 {
			g.eq[j] = make([]uint64, bitvec.Words(g.n))
			bitvec.PackBit(g.eq[j], o, 1)
		}
	}
}

// mill runs the comparisons of all groups together: their digit OTs (and
// extra, and the triple production pool needs unless poolReqs is nil) in one
// sequence of OT batches, then one AND tree schedule. Triples come from pool;
// when poolReqs is non-nil they are produced in this call's OT batches.
func (st *stream) mill(ctx context.Context, groups []*millGroup, pool *triplePool, poolReqs []otnReq, extra ...otnReq) error {
	if pool == nil {
		pool = &triplePool{}
		var reg, corr int
		for _, g := range groups {
			r, c := g.triples()
			reg, corr = reg+r, corr+c
		}
		poolReqs = pool.reserve(st, reg, corr)
	}
	reqs := append([]otnReq(nil), poolReqs...)
	for _, g := range groups {
		reqs = append(reqs, g.leafReqs(st)...)
	}
	reqs = append(reqs, extra...)
	if err := st.runOTN(ctx, reqs...); err != nil {
		return err
	}
	return st.andPhase(ctx, groups, pool)
}

// andLevel is one group's AND gates at one level, from this party's side:
// the triple shares taken and the masked inputs sent, per op (nil for a
// pass-through).
type andLevel struct {
	d, d2, e, f, f2 [][]uint64
	mx, mx2, my     [][]uint64
}

// andPhase evaluates the AND trees of the groups. Flight f of the schedule
// is sent by st.last (the sender of the last OT reply) when f is even and by
// the other party when f is odd; flight 0 carries the sender's masked bits of
// level 1 and flight f ≥ 1 those of levels f and f+1. Each party can compute
// what a flight carries from what it has received, so every flight costs one
// latency and a tree of L levels takes L+1 flights, the first of which
// leaves with the last OT reply.
func (st *stream) andPhase(ctx context.Context, groups []*millGroup, pool *triplePool) error {
	L := 0
	for _, g := range groups {
		L = max(L, g.depth())
		if len(g.lt) == 0 {
			g.res = make([]uint64, bitvec.Words(g.n))
		} else {
			g.res = g.lt[0]
		}
		if g.capLevel == 0 {
			g.low = g.lt[0]
		}
	}
	if L == 0 {
		return nil
	}
	first := st.last
	levels := make([][]*andLevel, L+1) // per level, per group
	theirs := make([][]uint64, L+1)
	sent := make([]bool, L+1)
	done := 0
	p0 := st.party == 0

	// prepare computes and writes this party's masked bits of level i.
	var w bitvec.Appender
	prepare := func(i int) error {
		lv := make([]*andLevel, len(groups))
		for gi, g := range groups {
			if i > g.depth() {
				continue
			}
			ops := g.levels[i-1]
			a := &andLevel{}
			for _, op := range ops {
				var d, d2, e, f, f2, mx, mx2, my []uint64
				switch {
				case op.hi < 0:
				case op.lo == 0:
					if !pool.hasReg(g.n) {
						return errors.New("internal error: regular triples exhausted")
					}
					d, e, f = pool.takeReg(g.n)
					mx, my = xorNew(g.lt[op.lo], d), xorNew(g.eq[op.hi], e)
					w.Append(mx, g.n)
					w.Append(my, g.n)
				default:
					if !pool.hasCorr(g.n) {
						return errors.New("internal error: correlated triples exhausted")
					}
					d, d2, e, f, f2 = pool.takeCorr(g.n)
					mx, mx2, my = xorNew(g.lt[op.lo], d), xorNew(g.eq[op.lo], d2), xorNew(g.eq[op.hi], e)
					w.Append(mx, g.n)
					w.Append(mx2, g.n)
					w.Append(my, g.n)
				}
				a.d, a.d2, a.e, a.f, a.f2 = append(a.d, d), append(a.d2, d2), append(a.e, e), append(a.f, f), append(a.f2, f2)
				a.mx, a.mx2, a.my = append(a.mx, mx), append(a.mx2, mx2), append(a.my, my)
			}
			lv[gi] = a
		}
		levels[i] = lv
		sent[i] = true
		return nil
	}
	// evaluate computes the outputs of level i from both parties' bits.
	evaluate := func(i int) {
		off := 0
		buf := theirs[i]
		next := func(n int) []uint64 {
			v := make([]uint64, bitvec.Words(n))
			bitvec.Extract(v, buf, off, n)
			off += n
			return v
		}
		for gi, g := range groups {
			a := levels[i][gi]
			if a == nil {
				continue
			}
			n := g.n
			ops := g.levels[i-1]
			lt := make([][]uint64, len(ops))
			eq := make([][]uint64, len(ops))
			for k, op := range ops {
				switch {
				case op.hi < 0:
					lt[k], eq[k] = g.lt[op.lo], g.eq[op.lo]
				case op.lo == 0:
					ox, oy := next(n), next(n)
					z := beaver(a.mx[k], ox, a.my[k], oy, a.d[k], a.e[k], a.f[k], p0)
					bitvec.Xor(z, g.lt[op.hi])
					lt[k] = z
				default:
					ox, ox2, oy := next(n), next(n), next(n)
					dy := xorNew(a.my[k], oy)
					z1 := beaverD(xorNew(a.mx[k], ox), dy, a.d[k], a.e[k], a.f[k], p0)
					bitvec.Xor(z1, g.lt[op.hi])
					lt[k] = z1
					eq[k] = beaverD(xorNew(a.mx2[k], ox2), dy, a.d2[k], a.e[k], a.f2[k], p0)
				}
			}
			g.lt, g.eq = lt, eq
			if i == g.capLevel {
				g.low = g.lt[0]
			}
			if i == g.depth() {
				g.res = g.lt[0]
			}
		}
		levels[i] = nil
		theirs[i] = nil
	}
	advance := func() {
		for done < L && sent[done+1] && theirs[done+1] != nil {
			evaluate(done + 1)
			done++
		}
	}
	levelsOf := func(f int) []int {
		if f == 0 {
			return []int{1}
		}
		if f+1 <= L {
			return []int{f, f + 1}
		}
		return []int{f}
	}
	bitsOf := func(i int) int {
		t := 0
		for _, g := range groups {
			t += g.levelBits(i)
		}
		return t
	}
	for f := 0; f <= L; f++ {
		sender := first
		if f%2 == 1 {
			sender = 1 - first
		}
		ls := levelsOf(f)
		if sender == st.party {
			w.Reset(st.sc.frame)
			for _, i := range ls {
				advance()
				if done < i-1 {
					return fmt.Errorf("internal error: AND level %d prepared before level %d", i, i-1)
				}
				if err := prepare(i); err != nil {
					return err
				}
			}
			st.sc.frame = w.Words()
			if err := st.sendFlight(ctx, w.Words(), w.Len()); err != nil {
				return err
			}
		} else {
			total := 0
			for _, i := range ls {
				total += bitsOf(i)
			}
			buf, err := st.recvFlight(ctx, total)
			if err != nil {
				return err
			}
			off := 0
			for _, i := range ls {
				nb := bitsOf(i)
				v := make([]uint64, bitvec.Words(nb))
				bitvec.Extract(v, buf, off, nb)
				theirs[i] = v
				off += nb
			}
		}
		advance()
	}
	if done != L {
		return fmt.Errorf("internal error: AND tree stopped at level %d of %d", done, L)
	}
	return nil
}
