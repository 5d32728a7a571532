package fhe

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/big"
	"slices"
	"sync"

	"github.com/tuneinsight/lattigo/v6/core/rlwe"
	"github.com/tuneinsight/lattigo/v6/ring"
	"github.com/tuneinsight/lattigo/v6/schemes/bgv"
	"github.com/tuneinsight/lattigo/v6/utils/sampling"
)

// Diag is one diagonal of a linear map on period-periodic vectors: y[i] += V[i]·x[(i+D) mod period]
// for i < period (values mod n; positions the map does not write are zero).
type Diag struct {
	D int
	V []uint64
}

// Term is a linear map applied to one encrypted vector, as its non-zero diagonals.
type Term struct {
	X     *Vector
	Diags []Diag
}

// ScaledTerm is C·X (C mod n): the trivial linear map, which costs no level.
type ScaledTerm struct {
	X *Vector
	C uint64
}

// Stats counts the homomorphic operations an Evaluator performed. Encodes counts the diagonals
// encoded into plaintexts (PlainMuls minus those found already encoded in the plaintext cache).
type Stats struct {
	Rotations, PlainMuls, CtMuls, Rescales int
	Encodes                                int
}

// Evaluator is the server's side: it evaluates linear maps, products and the final
// re-randomisation with the client's evaluation keys. It never holds a secret key.
type Evaluator struct {
	p      *Params
	ev     []*bgv.Evaluator
	ecd    []*bgv.Encoder
	pkEnc  []*rlwe.Encryptor
	rots   []int
	stride int             // lanes per row: element i of lane k is in column i·stride + k mod stride
	buf    [][]uint64      // per component: the slot values being encoded
	bufT   []ring.Poly     // per component: the diagonal being encoded, mod t
	prng   []sampling.PRNG // per component: flooding randomness
	cache  *plainCache     // encoded diagonals kept across maps and round trips (nil: none)
	// Stats counts the operations on one component (every component does the same).
	Stats Stats
}

// NewEvaluator prepares evaluation with the client's keys for vectors packed with the given
// stride (lanes per row, a power of two dividing N/2; see Client.Encrypt).
func NewEvaluator(p *Params, k *Keys, stride int) (*Evaluator, error) {
	if k == nil || k.PK == nil || k.RLK == nil || len(k.GK) != len(k.Rotations) {
		return nil, fmt.Errorf("fhe: incomplete evaluation keys")
	}
	if err := p.checkStride(stride); err != nil {
		return nil, err
	}
	evk := rlwe.NewMemEvaluationKeySet(k.RLK, k.GK...)
	e := &Evaluator{p: p, rots: slices.Clone(k.Rotations), stride: stride}
	for _, bp := range p.comp {
		prng, err := sampling.NewPRNG() // keyed from crypto/rand
		if err != nil {
			return nil, fmt.Errorf("fhe: flooding randomness: %w", err)
		}
		e.prng = append(e.prng, prng)
		e.buf = append(e.buf, make([]uint64, bp.MaxSlots()))
		e.bufT = append(e.bufT, bp.RingT().NewPoly())
		e.ev = append(e.ev, bgv.NewEvaluator(bp, evk))
		e.ecd = append(e.ecd, bgv.NewEncoder(bp))
		e.pkEnc = append(e.pkEnc, rlwe.NewEncryptor(bp, k.PK))
	}
	return e, nil
}

// rotate returns x rotated by k elements (columns k·stride): element i of every lane then holds
// what element i+k held.
func (e *Evaluator) rotate(i int, x *rlwe.Ciphertext, k int) (*rlwe.Ciphertext, error) {
	r := k * e.stride
	if !slices.Contains(e.rots, r) {
		return nil, fmt.Errorf("fhe: no Galois key for a rotation by %d columns (%d elements at stride %d)", r, k, e.stride)
	}
	y, err := e.ev[i].RotateColumnsNew(x, r)
	if err != nil {
		return nil, fmt.Errorf("fhe: rotate by %d: %w", r, err)
	}
	e.count(i, &e.Stats.Rotations)
	return y, nil
}

// encode writes w (values mod n, one period, a power of two dividing N/(2·stride)) replicated
// along every lane into a plaintext at the given level and scale, reduced mod component i's t.
func (e *Evaluator) encode(i int, w []uint64, level int, scale rlwe.Scale) (*rlwe.Plaintext, error) {
	bp := e.p.comp[i]
	period := len(w)
	if period == 0 || (e.p.Slots()/e.stride)%period != 0 {
		return nil, fmt.Errorf("fhe encode: period %d does not divide the lane length %d", period, e.p.Slots()/e.stride)
	}
	pt := bgv.NewPlaintext(bp, level)
	if err := e.encodeInto(i, w, scale, pt); err != nil {
		return nil, err
	}
	return pt, nil
}

// encodeInto is encode into an existing plaintext pt (at its level; every coefficient is
// overwritten), so that a loop over many diagonals reuses one plaintext instead of allocating
// one per diagonal. w's length must divide the lane length (encode checks it).
func (e *Evaluator) encodeInto(i int, w []uint64, scale rlwe.Scale, pt *rlwe.Plaintext) error {
	t := e.p.comp[i].PlaintextModulus()
	period := len(w)
	buf := e.buf[i]
	half := e.p.Slots()
	for j := range buf {
		buf[j] = w[((j%half)/e.stride)%period] % t
	}
	pt.Scale = scale
	if err := e.ecd[i].Encode(buf, pt); err != nil {
		return fmt.Errorf("fhe: encode mod %d: %w", t, err)
	}
	return nil
}

// encodeMont writes w (one period of values mod n, replicated along every lane as encode does)
// into out as the polynomial a ciphertext is multiplied by: reduced mod component i's t, mapped
// from the slots to coefficients (INTT mod t), lifted to Q at the given level, in the NTT domain
// and Montgomery form. MulCoeffsMontgomeryThenAdd(ct, out, acc) then adds ct·w to acc, which is
// what lattigo's MulThenAdd with a plaintext at the default scale computes: its encoder multiplies
// by t^-1 and its product by t·2^64, so the two factors are left out here and one Montgomery
// conversion is done instead.
func (e *Evaluator) encodeMont(i int, w []uint64, level int, out ring.Poly) error {
	bp := e.p.comp[i]
	t := bp.PlaintextModulus()
	period := len(w)
	if period == 0 || (e.p.Slots()/e.stride)%period != 0 {
		return fmt.Errorf("fhe encode: period %d does not divide the lane length %d", period, e.p.Slots()/e.stride)
	}
	buf := e.buf[i]
	half := e.p.Slots()
	for j := range buf {
		buf[j] = w[((j%half)/e.stride)%period] % t
	}
	pT := e.bufT[i]
	if err := e.ecd[i].EncodeRingT(buf, bp.DefaultScale(), pT); err != nil {
		return fmt.Errorf("fhe: encode mod %d: %w", t, err)
	}
	e.ecd[i].RingT2Q(level, false, pT, out)
	ringQ := bp.RingQ().AtLevel(level)
	ringQ.NTT(out, out)
	ringQ.MForm(out, out)
	return nil
}

// plainCache keeps encoded diagonals (encodeMont's polynomials) for reuse by later maps and round
// trips of the same session, up to a byte budget split evenly between the components (so each
// component's choice is deterministic); past it, diagonals are encoded per use. Entries are found
// by content (a hash of the level, the giant-step shift, the diagonal's index and values), so a
// map's weights need no name, and equal diagonals share one entry. Component i's map and count
// are touched only by component i's goroutine.
type plainCache struct {
	seed maphash.Seed
	max  int64 // per component
	used []int64
	comp []map[uint64]ring.Poly
}

// SetPlainCache keeps up to maxBytes of encoded diagonals across maps and round trips (0: none, the
// default), maxBytes/components for each CRT component. A diagonal product with a cached plaintext
// costs two coefficient-wise products instead of an encoding (one inverse NTT mod t and one NTT
// per prime) and the products. Setting it drops what was kept.
func (e *Evaluator) SetPlainCache(maxBytes int64) {
	if maxBytes <= 0 {
		e.cache = nil
		return
	}
	c := &plainCache{seed: maphash.MakeSeed(), max: maxBytes / int64(len(e.p.comp)), used: make([]int64, len(e.p.comp))}
	for range e.p.comp {
		c.comp = append(c.comp, map[uint64]ring.Poly{})
	}
	e.cache = c
}

// PlainCacheBytes is the size of the encoded diagonals the cache holds.
func (e *Evaluator) PlainCacheBytes() int64 {
	if e.cache == nil {
		return 0
	}
	var n int64
	for _, u := range e.cache.used {
		n += u
	}
	return n
}

func (c *plainCache) key(level, shift int, d Diag) uint64 {
	if c == nil {
		return 0
	}
	var h maphash.Hash
	h.SetSeed(c.seed)
	var b [8]byte
	for _, v := range [...]uint64{uint64(level), uint64(shift), uint64(d.D), uint64(len(d.V))} {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	buf := make([]byte, 8*256)
	for j := 0; j < len(d.V); j += 256 {
		n := 0
		for _, v := range d.V[j:min(j+256, len(d.V))] {
			binary.LittleEndian.PutUint64(buf[n:], v)
			n += 8
		}
		h.Write(buf[:n])
	}
	return h.Sum64()
}

func (c *plainCache) get(i int, key uint64) (ring.Poly, bool) {
	if c == nil {
		return ring.Poly{}, false
	}
	p, ok := c.comp[i][key]
	return p, ok
}

// room reserves, for component i, the bytes of a polynomial of words coefficients if its budget
// allows.
func (c *plainCache) room(i, words int) bool {
	if c == nil || c.used[i]+int64(8*words) > c.max {
		return false
	}
	c.used[i] += int64(8 * words)
	return true
}

func (c *plainCache) put(i int, key uint64, p ring.Poly) { c.comp[i][key] = p }

// LinearPlan is the shape of one linear map: the diagonals are cyclic over Period elements
// (a power of two; every source vector's period divides it), grouped by giant steps of Giant
// elements (baby steps by 1); after the diagonals, Folds rotate-and-add the result (y += rot(y, f)
// for each f in turn), which sums the Period/m blocks of m elements when the map has only m
// diagonals (Folds m, 2m, ..., Period/2: the output then has period m).
type LinearPlan struct {
	Period, Giant int
	Folds         []int
}

// Linear returns fold(Σ_terms Σ_diags diag ⊙ rot(X, D)) + constant, rescaled once: one level. The
// rotations are baby steps by 1 and giant steps by plan.Giant (Horner), then the folds, each by
// the key of its own amount. constant is one period of the output (values mod n) or nil. A
// cancelled ctx stops it between rotations and every few diagonal products (a large map takes
// minutes) with ctx's error.
func (e *Evaluator) Linear(ctx context.Context, terms []Term, constant []uint64, plan LinearPlan) (_ *Vector, err error) {
	defer recoverErr(&err)
	period, g := plan.Period, plan.Giant
	if g < 1 || period%g != 0 {
		return nil, fmt.Errorf("fhe linear: giant step %d does not divide the period %d", g, period)
	}
	out := &Vector{Ct: make([]*rlwe.Ciphertext, len(e.p.comp))}
	err = e.perComp(func(i int) error {
		if len(terms) == 0 {
			return fmt.Errorf("fhe linear: no terms")
		}
		var acc *rlwe.Ciphertext
		for _, group := range sameLevelScale(i, terms) {
			y, err := e.linearTerms(ctx, i, group, period, g)
			if err != nil {
				return err
			}
			if acc, err = e.add(i, acc, y); err != nil {
				return err
			}
		}
		if err := e.ev[i].Rescale(acc, acc); err != nil {
			return fmt.Errorf("fhe linear: rescale (the chain is too short for this depth): %w", err)
		}
		e.count(i, &e.Stats.Rescales)
		for _, f := range plan.Folds {
			r, err := e.rotate(i, acc, f)
			if err != nil {
				return fmt.Errorf("fhe linear fold: %w", err)
			}
			if err := e.ev[i].Add(acc, r, acc); err != nil {
				return fmt.Errorf("fhe linear fold: %w", err)
			}
		}
		if constant != nil {
			pt, err := e.encode(i, constant, acc.Level(), acc.Scale)
			if err != nil {
				return err
			}
			if err := e.ev[i].Add(acc, pt, acc); err != nil {
				return fmt.Errorf("fhe linear: add constant: %w", err)
			}
		}
		out.Ct[i] = acc
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// steps returns the key rotations (in elements, each a key of the evaluator) whose sum is k, k in
// [0, lane length): greedily the largest key first; ok is false when the keys cannot make k.
func (e *Evaluator) steps(k int) (out []int, ok bool) {
	for k > 0 {
		best := 0
		for _, r := range e.rots {
			if r%e.stride == 0 && r/e.stride <= k && r/e.stride > best {
				best = r / e.stride
			}
		}
		if best == 0 {
			return nil, false
		}
		out = append(out, best)
		k -= best
	}
	return out, true
}

// rotateBy rotates x by k elements with the keys (steps).
func (e *Evaluator) rotateBy(i int, x *rlwe.Ciphertext, k int) (*rlwe.Ciphertext, error) {
	st, ok := e.steps(k)
	if !ok {
		return nil, fmt.Errorf("fhe: the keys cannot make a rotation by %d elements", k)
	}
	for _, r := range st {
		var err error
		if x, err = e.rotate(i, x, r); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// bsgs is a baby-step giant-step schedule for the diagonals of one or more terms: per term, baby
// rotations b of its vector (ascending, each reached from the previous one), and giant steps a
// shared by the terms (descending, Horner: acc is rotated by the gap to the next a, then by the
// last a), with giant step g; cost is the number of key rotations it takes, or -1 when the keys
// cannot make it.
type bsgs struct {
	g      int
	babies [][]int
	giants []int
	cost   int
}

// schedule returns the cheapest baby-step giant-step schedule for the diagonal sets (one per
// term; the terms' products share the giant steps) over the given period: every power of two g
// up to the period, and rotations composed from the keys, so that sparse diagonal sets (a
// convolution's in a layout that suits it) skip the empty steps.
func (e *Evaluator) schedule(sets [][]Diag, period, hint int) bsgs {
	cost := func(k int) int {
		st, ok := e.steps(k)
		if !ok {
			return -1
		}
		return len(st)
	}
	best := bsgs{cost: -1}
	for g := 1; g <= period; g *= 2 {
		aset := map[int]bool{}
		sc := bsgs{g: g, babies: make([][]int, len(sets))}
		total := 0
		for t, ds := range sets {
			bset := map[int]bool{}
			for _, d := range ds {
				bset[d.D%g], aset[d.D/g] = true, true
			}
			for b := range bset {
				sc.babies[t] = append(sc.babies[t], b)
			}
			slices.Sort(sc.babies[t])
			prev := 0
			for _, b := range sc.babies[t] {
				c := cost(b - prev)
				if c < 0 || total < 0 {
					total = -1
					break
				}
				total, prev = total+c, b
			}
		}
		for a := range aset {
			sc.giants = append(sc.giants, a)
		}
		slices.Sort(sc.giants)
		slices.Reverse(sc.giants)
		if total >= 0 {
			for k, a := range sc.giants {
				next := 0
				if k+1 < len(sc.giants) {
					next = sc.giants[k+1]
				}
				c := cost((a - next) * g)
				if c < 0 {
					total = -1
					break
				}
				total += c
			}
		}
		if total < 0 {
			continue
		}
		sc.cost = total
		if best.cost < 0 || total < best.cost || total == best.cost && g == hint {
			best = sc
		}
	}
	return best
}

// sameLevelScale groups the terms whose component-i vectors are at the same level and scale
// (the terms of one group share giant steps; the groups' results are added), in order.
func sameLevelScale(i int, terms []Term) [][]Term {
	var groups [][]Term
	for _, tm := range terms {
		x := tm.X.Ct[i]
		k := slices.IndexFunc(groups, func(g []Term) bool {
			y := g[0].X.Ct[i]
			return y.Level() == x.Level() && y.Scale.Cmp(x.Scale) == 0
		})
		if k < 0 {
			groups = append(groups, []Term{tm})
		} else {
			groups[k] = append(groups[k], tm)
		}
	}
	return groups
}

// linearTerms returns Σ_terms Σ_diags diag ⊙ rot(X, D) for component i, before the rescaling,
// for terms whose vectors are at one level and scale (sameLevelScale): each gets its own baby
// steps, and all products go into giant-step accumulators the terms share (one Horner pass of
// giant rotations).
func (e *Evaluator) linearTerms(ctx context.Context, i int, terms []Term, period, g int) (*rlwe.Ciphertext, error) {
	level, scale := terms[0].X.Ct[i].Level(), terms[0].X.Ct[i].Scale
	for _, tm := range terms {
		if x := tm.X.Ct[i]; x.Level() != level || x.Scale.Cmp(scale) != 0 {
			return nil, fmt.Errorf("internal: linearTerms with vectors at different levels or scales")
		}
		for _, d := range tm.Diags {
			if d.D < 0 || d.D >= period || len(d.V) != period {
				return nil, fmt.Errorf("fhe linear: diagonal %d (%d values) for period %d", d.D, len(d.V), period)
			}
		}
	}
	xs := make([]*rlwe.Ciphertext, len(terms))
	sets := make([][]Diag, len(terms))
	for t, tm := range terms {
		xs[t], sets[t] = tm.X.Ct[i], tm.Diags
	}
	sc := e.schedule(sets, period, g)
	if sc.cost < 0 {
		return nil, fmt.Errorf("fhe linear: the Galois keys cannot make the rotations of this map")
	}
	g = sc.g
	giant := map[int]*rlwe.Ciphertext{}
	w := make([]uint64, period)
	ringQ := e.p.comp[i].RingQ().AtLevel(level)
	var scratch ring.Poly // the encoded diagonal when it is not cached
	for t, tm := range terms {
		baby := map[int]*rlwe.Ciphertext{}
		prevB, prev := 0, xs[t]
		for _, b := range sc.babies[t] {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			r, err := e.rotateBy(i, prev, b-prevB)
			if err != nil {
				return nil, fmt.Errorf("fhe linear: %w", err)
			}
			baby[b], prevB, prev = r, b, r
		}
		for k, d := range tm.Diags {
			if k%16 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			a, b := d.D/g, d.D%g
			// rot_{-ga}(diag): w[j] = V[(j - ga) mod period].
			sh := (g * a) % period
			key := e.cache.key(level, sh, d)
			pt, ok := e.cache.get(i, key)
			if !ok {
				copy(w, d.V[period-sh:])
				copy(w[sh:], d.V[:period-sh])
				keep := e.cache.room(i, ringQ.N()*(level+1))
				if keep {
					pt = ringQ.NewPoly()
				} else {
					if scratch.N() == 0 {
						scratch = ringQ.NewPoly()
					}
					pt = scratch
				}
				if err := e.encodeMont(i, w, level, pt); err != nil {
					return nil, err
				}
				if keep {
					e.cache.put(i, key, pt)
				}
				e.count(i, &e.Stats.Encodes)
			}
			if giant[a] == nil {
				giant[a] = bgv.NewCiphertext(e.p.comp[i], 1, level)
				giant[a].Scale = scale
			}
			// giant[a] += baby[b]·pt (pt in Montgomery form: the product is exact).
			for c := range giant[a].Value {
				ringQ.MulCoeffsMontgomeryThenAdd(baby[b].Value[c], pt, giant[a].Value[c])
			}
			e.count(i, &e.Stats.PlainMuls)
		}
	}
	if len(sc.giants) == 0 { // no diagonals at all: zero
		acc := bgv.NewCiphertext(e.p.comp[i], 1, level)
		acc.Scale = scale
		return acc, nil
	}
	// Horner over the non-empty giant steps: y = rot_{g·a_k}(u_k + rot_{g(a_{k-1}-a_k)}(...)).
	var acc *rlwe.Ciphertext
	for k, a := range sc.giants {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var err error
		if acc, err = e.add(i, acc, giant[a]); err != nil {
			return nil, err
		}
		next := 0
		if k+1 < len(sc.giants) {
			next = sc.giants[k+1]
		}
		if acc, err = e.rotateBy(i, acc, (a-next)*g); err != nil {
			return nil, fmt.Errorf("fhe linear: %w", err)
		}
	}
	return acc, nil
}

// add returns a+b (a may be nil), at the lower of their levels.
func (e *Evaluator) add(i int, a, b *rlwe.Ciphertext) (*rlwe.Ciphertext, error) {
	if a == nil {
		return b.CopyNew(), nil
	}
	if a.Level() > b.Level() {
		e.ev[i].DropLevel(a, a.Level()-b.Level())
	} else if b.Level() > a.Level() {
		b = b.CopyNew()
		e.ev[i].DropLevel(b, b.Level()-a.Level())
	}
	if err := e.ev[i].Add(a, b, a); err != nil {
		return nil, fmt.Errorf("fhe: add: %w", err)
	}
	return a, nil
}

// Scale returns Σ C·X + constant without a rescaling (no level): the linear maps that are the
// identity up to a scalar.
func (e *Evaluator) Scale(terms []ScaledTerm, constant []uint64) (_ *Vector, err error) {
	defer recoverErr(&err)
	out := &Vector{Ct: make([]*rlwe.Ciphertext, len(e.p.comp))}
	err = e.perComp(func(i int) error {
		var c big.Int
		t := e.p.comp[i].PlaintextModulus()
		var acc *rlwe.Ciphertext
		for _, tm := range terms {
			y := tm.X.Ct[i]
			if k := tm.C % t; k != 1 {
				var err error
				if y, err = e.ev[i].MulNew(y, c.SetUint64(k)); err != nil {
					return fmt.Errorf("fhe: multiply by a scalar: %w", err)
				}
			}
			var err error
			if acc, err = e.add(i, acc, y); err != nil {
				return err
			}
		}
		if acc == nil {
			return fmt.Errorf("fhe scale: no terms")
		}
		if constant != nil {
			pt, err := e.encode(i, constant, acc.Level(), acc.Scale)
			if err != nil {
				return err
			}
			if err := e.ev[i].Add(acc, pt, acc); err != nil {
				return fmt.Errorf("fhe: add constant: %w", err)
			}
		}
		out.Ct[i] = acc
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Mul returns the slot-wise product a·b, relinearised and rescaled: one level.
func (e *Evaluator) Mul(a, b *Vector) (_ *Vector, err error) {
	defer recoverErr(&err)
	out := &Vector{Ct: make([]*rlwe.Ciphertext, len(e.p.comp))}
	err = e.perComp(func(i int) error {
		x, y := a.Ct[i], b.Ct[i]
		if x.Level() != y.Level() {
			l := min(x.Level(), y.Level())
			x, y = x.CopyNew(), y.CopyNew()
			e.ev[i].DropLevel(x, x.Level()-l)
			e.ev[i].DropLevel(y, y.Level()-l)
		}
		if x.Level() == 0 {
			return fmt.Errorf("fhe mul: no level left (the chain is too short for this depth)")
		}
		z, err := e.ev[i].MulRelinNew(x, y)
		if err != nil {
			return fmt.Errorf("fhe mul: %w", err)
		}
		if err := e.ev[i].Rescale(z, z); err != nil {
			return fmt.Errorf("fhe mul: rescale: %w", err)
		}
		e.count(i, &e.Stats.CtMuls)
		e.count(i, &e.Stats.Rescales)
		out.Ct[i] = z
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// FloodBits is log2 of the flooding bound F relative to N²·2^8 (docs/security.md): the noise
// added to the result is uniform in [-F, F) with F = 2^(FloodBits + 2·logN + 8).
const FloodBits = 40

// Finish prepares a result for the client: it switches the ciphertexts down to the result level
// by rescaling, re-randomises them with a fresh public-key encryption of zero (so the mask part
// no longer depends on the computation) and adds noise uniform in [-F, F) to hide the
// evaluation noise (circuit privacy; docs/security.md states the bound).
func (e *Evaluator) Finish(v *Vector) (err error) {
	defer recoverErr(&err)
	return e.perComp(func(i int) error {
		bp := e.p.comp[i]
		ct := v.Ct[i]
		for ct.Level() > e.p.OutLevel {
			if err := e.ev[i].Rescale(ct, ct); err != nil {
				return fmt.Errorf("fhe finish: rescale: %w", err)
			}
			e.count(i, &e.Stats.Rescales)
		}
		if ct.Level() < e.p.OutLevel {
			return fmt.Errorf("fhe finish: the result is at level %d, below the result level %d (the chain is too short)", ct.Level(), e.p.OutLevel)
		}
		level := ct.Level()
		ringQ := bp.RingQ().AtLevel(level)
		zero := bgv.NewCiphertext(bp, 1, level)
		if err := e.pkEnc[i].EncryptZero(zero); err != nil {
			return fmt.Errorf("fhe finish: encryption of zero: %w", err)
		}
		ringQ.Add(ct.Value[0], zero.Value[0], ct.Value[0])
		ringQ.Add(ct.Value[1], zero.Value[1], ct.Value[1])
		if err := e.flood(i, ringQ, zero.Value[0]); err != nil {
			return err
		}
		ringQ.Add(ct.Value[0], zero.Value[0], ct.Value[0])
		return nil
	})
}

// perComp runs f for every CRT component concurrently (the components are independent: each has
// its own evaluator, encoder and buffers) and returns the first error; a panic inside lattigo in
// any of them is an error.
func (e *Evaluator) perComp(f func(i int) error) error {
	errs := make([]error, len(e.p.comp))
	var wg sync.WaitGroup
	for i := range e.p.comp {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer recoverErr(&errs[i])
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// count increments a statistic for component 0 only (every component does the same work).
func (e *Evaluator) count(i int, n *int) {
	if i == 0 {
		*n++
	}
}

// flood writes into p (NTT domain) a polynomial whose coefficients are uniform in [-F, F),
// F = 2^f, f = FloodBits + 2·logN + 8, drawn from the crypto/rand-keyed PRNG.
func (e *Evaluator) flood(i int, ringQ *ring.Ring, p ring.Poly) error {
	f := FloodBits + 2*e.p.LogN + 8
	if f < 64 || f > 126 {
		return fmt.Errorf("fhe flood: bound 2^%d outside 2^64..2^126", f)
	}
	n := ringQ.N()
	raw := make([]byte, 16*n)
	if _, err := e.prng[i].Read(raw); err != nil {
		return fmt.Errorf("fhe flood: randomness: %w", err)
	}
	hiMask := uint64(1)<<uint(f+1-64) - 1 // f+1 bits in total: [0, 2F), then shift by -F
	subs := ringQ.SubRings[:ringQ.Level()+1]
	two64 := make([]uint64, len(subs))
	fq := make([]uint64, len(subs))
	for k, s := range subs {
		q := s.Modulus
		two64[k] = ((^uint64(0))%q + 1) % q // 2^64 mod q
		fq[k] = powMod2(f, q)
	}
	for j := 0; j < n; j++ {
		lo := leUint64(raw[16*j:])
		hi := leUint64(raw[16*j+8:]) & hiMask
		// v = hi·2^64 + lo - 2^f, reduced mod each q.
		for k, s := range subs {
			q := s.Modulus
			r := addMod(mulMod(hi%q, two64[k], q), lo%q, q)
			if fq := fq[k]; r >= fq {
				r -= fq
			} else {
				r = r + q - fq
			}
			p.Coeffs[k][j] = r
		}
	}
	ringQ.NTT(p, p)
	return nil
}

func powMod2(f int, q uint64) uint64 {
	r := uint64(1) % q
	for range f {
		r = addMod(r, r, q)
	}
	return r
}

func leUint64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// recoverErr turns a panic inside lattigo (which reports some misuse by panicking) into an error,
// so that a malformed input from the peer never crashes a server.
func recoverErr(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("fhe: evaluation failed inside lattigo: %v", r)
	}
}
