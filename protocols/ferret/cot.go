package ferret

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// Role says which end of a COT stream a party holds.
type Role int

const (
	// Sender holds Δ and gets the keys K_i.
	Sender Role = iota
	// Receiver gets the choice bits b_i and M_i = K_i ⊕ b_i·Δ.
	Receiver
)

func (r Role) String() string {
	switch r {
	case Sender:
		return "sender"
	case Receiver:
		return "receiver"
	}
	return fmt.Sprintf("role(%d)", int(r))
}

const protoVersion = 1

const helloMagic = "FRRT"

// Tweak domains (the high word of the TCCR tweak). Bit 63 is set, so they
// never meet package ot's IKNP domains (stream<<32 | … with fewer than
// 2^31 streams); bits 56..62 name the purpose, bits 16..55 the instance
// (40 bits of the public LPN seed, so two streams with the same Δ share
// tweaks with probability 2^-40), bits 0..15 a hash output block, message
// index or log2 N.
const (
	purposeGGM     = 1
	purposeDerived = 2
)

// COT is one party's end of a Ferret COT stream in one direction: a
// reservoir of 128-bit correlated OTs with a global Δ that refills by one
// whole Ferret iteration when it runs dry. Both parties must draw the same
// numbers of COTs in the same order (a refill is a message from the sender
// to the receiver), interleaved in the same order with any other traffic on
// the connection. A COT is not safe for concurrent use.
type COT struct {
	conn    *transport.Conn
	role    Role
	cfg     Config
	workers int

	delta prg.Block // sender only
	id    uint64    // instance id, part of every tweak
	rng   *prg.PRG
	wrng  []*prg.PRG // per worker: GGM roots
	hash  *prg.Hash  // TCCR
	main  *code
	pre   *code
	exp   []*expander
	lsc   []*lpnScratch

	out      []prg.Block // the current iteration's outputs
	outBits  []uint64    // receiver: their choice bits
	base     []prg.Block // the next iteration's base COTs
	baseBits []uint64
	baseByte []byte      // receiver: the current iteration's base choice bits, one per byte
	avail    []prg.Block // the not yet handed out part of out
	availBit int         // index in outBits of avail[0]'s choice bit

	hold   bool   // a carved share: refills refused (see carve)
	ggmCtr uint64 // GGM OTs used so far (hash tweak)
	used   uint64 // COTs handed out so far
	iters  int
	msg    []prg.Block
	hbuf   []prg.Block
	err    error
}

// Options tunes a COT.
type Options struct {
	// Workers is the number of goroutines an iteration uses for the GGM
	// expansion and the LPN step (0 or 1: the calling goroutine only).
	Workers int
}

// New sets up one COT stream over the OT session s (which provides the
// bootstrap: IKNP block COTs with Δ = the IKNP sender's secret; see
// ot.Session.SendBlockCOT). The two parties call New with opposite roles and
// the same config; the sender's hello carries the config and the public
// LPN seed, and the receiver refuses a mismatch. Setup runs the bootstrap
// (cfg.BaseCOTs() IKNP COTs) and the pre-iteration, if any; main
// iterations run when the reservoir is first drawn from.
func New(ctx context.Context, s *ot.Session, role Role, cfg Config, opt Options) (*COT, error) {
	if s == nil {
		return nil, errors.New("ferret: New: nil OT session")
	}
	if role != Sender && role != Receiver {
		return nil, fmt.Errorf("ferret: New: unknown %v", role)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("ferret: New: %w", err)
	}
	rng, err := prg.NewRandom()
	if err != nil {
		return nil, fmt.Errorf("ferret: New: %w", err)
	}
	w := max(opt.Workers, 1)
	c := &COT{conn: s.Conn(), role: role, cfg: cfg, workers: w, rng: rng, hash: prg.NewHash()}
	depth := cfg.Main.LogBin
	nmax := cfg.Main.N
	if cfg.HasPre() {
		depth = max(depth, cfg.Pre.LogBin)
		nmax = max(nmax, cfg.Pre.N)
	}
	for range w {
		c.exp = append(c.exp, newExpander(depth, treesPerFrame))
		c.lsc = append(c.lsc, new(lpnScratch))
		c.wrng = append(c.wrng, rng.Split())
	}
	c.out = make([]prg.Block, nmax)
	c.base = make([]prg.Block, cfg.Main.Reserve())
	if role == Receiver {
		c.outBits = make([]uint64, bitvec.Words(nmax))
		c.baseBits = make([]uint64, bitvec.Words(cfg.Main.Reserve()))
	}
	if err := c.setup(ctx, s); err != nil {
		return nil, fmt.Errorf("ferret: New (%v, config %q): %w", role, cfg.Name, err)
	}
	return c, nil
}

func (c *COT) hello(seed prg.Seed) [helloSize]byte {
	var m [helloSize]byte
	copy(m[:4], helloMagic)
	m[4] = protoVersion
	for i, v := range []int{c.cfg.Main.N, c.cfg.Main.T, c.cfg.Main.K, c.cfg.Main.LogBin,
		c.cfg.Pre.N, c.cfg.Pre.T, c.cfg.Pre.K, c.cfg.Pre.LogBin} {
		binary.LittleEndian.PutUint32(m[8+4*i:], uint32(v))
	}
	copy(m[40:], seed[:])
	return m
}

func (c *COT) setSeed(seed prg.Seed) {
	c.id = binary.LittleEndian.Uint64(seed[:8]) & (1<<40 - 1)
	c.main = newCode(seed, c.cfg.Main.K)
	if c.cfg.HasPre() {
		c.pre = newCode(seed, c.cfg.Pre.K)
	}
}

// setup runs the hello, the IKNP bootstrap and the pre-iteration.
func (c *COT) setup(ctx context.Context, s *ot.Session) error {
	m0 := c.cfg.BaseCOTs()
	base := make([]prg.Block, m0)
	var baseBits []uint64
	if c.role == Sender {
		seed := c.rng.Seed()
		h := c.hello(seed)
		if err := c.conn.Send(ctx, h[:]); err != nil {
			return err
		}
		c.setSeed(seed)
		if err := s.SendBlockCOT(ctx, base); err != nil {
			return err
		}
		c.delta = s.BlockCOTDelta()
	} else {
		baseBits = make([]uint64, bitvec.Words(m0))
		c.rng.Uint64s(baseBits)
		if err := s.RecvBlockCOT(ctx, baseBits, base); err != nil {
			return err
		}
		var h [helloSize]byte
		if err := c.conn.Recv(ctx, h[:]); err != nil {
			return err
		}
		var seed prg.Seed
		copy(seed[:], h[40:])
		if want := c.hello(seed); h != want {
			msg := "ferret: the COT sender's magic, version or parameters differ from the receiver's"
			_ = c.conn.Abort(ctx, msg)
			return errors.New(msg)
		}
		c.setSeed(seed)
	}
	if !c.cfg.HasPre() {
		copy(c.base, base)
		if c.role == Receiver {
			copy(c.baseBits, baseBits)
		}
		return nil
	}
	if err := c.iterate(ctx, c.cfg.Pre, c.pre, base, baseBits); err != nil {
		return err
	}
	c.keep(c.cfg.Pre.N)
	return nil
}

// keep moves the first Main.Reserve() outputs of the iteration just run
// (n outputs) to the base buffers and makes the rest available.
func (c *COT) keep(n int) {
	m := c.cfg.Main.Reserve()
	copy(c.base, c.out[:m])
	if c.role == Receiver {
		copy(c.baseBits, c.outBits[:len(c.baseBits)])
	}
	c.avail = c.out[m:n]
	c.availBit = m
}

// errRefillHeld is the error of a draw beyond a carved share.
var errRefillHeld = errors.New("ferret: a carved share of the reservoir ran dry (its caller drew more COTs than it had carved)")

// carve returns a COT that hands out the next n available COTs of c (which
// skips them) and never refills.
func (c *COT) carve(n int) *COT {
	d := *c
	d.hold = true
	d.avail, d.availBit = c.avail[:n], c.availBit
	c.avail = c.avail[n:]
	c.availBit += n
	c.used += uint64(n)
	return &d
}

// refill runs one main iteration.
func (c *COT) refill(ctx context.Context) error {
	if c.hold {
		return c.fail(errRefillHeld)
	}
	if err := c.iterate(ctx, c.cfg.Main, c.main, c.base, c.baseBits); err != nil {
		return c.fail(err)
	}
	c.keep(c.cfg.Main.N)
	return nil
}

func (c *COT) fail(err error) error {
	if c.err == nil {
		c.err = err
	}
	return err
}

func (c *COT) usable() error {
	if c.err != nil {
		return fmt.Errorf("ferret: COT unusable after an earlier failure: %w", c.err)
	}
	return nil
}

// Role returns this party's role.
func (c *COT) Role() Role { return c.role }

// Delta returns Δ (sender only; the zero block at the receiver).
func (c *COT) Delta() prg.Block { return c.delta }

// Available returns the number of COTs that can be drawn before the next
// refill.
func (c *COT) Available() int { return len(c.avail) }

// Used returns the number of COTs handed out so far.
func (c *COT) Used() uint64 { return c.used }

// Iterations returns the number of main iterations run so far.
func (c *COT) Iterations() int { return c.iters }

// Config returns the parameter set.
func (c *COT) Config() Config { return c.cfg }

// Send draws the next len(k) COTs at the sender: k[i] = K_i (the receiver's
// M_i = K_i ⊕ b_i·Δ).
func (c *COT) Send(ctx context.Context, k []prg.Block) error {
	if c.role != Sender {
		return errors.New("ferret: Send on the receiver's end of a COT stream")
	}
	if err := c.usable(); err != nil {
		return err
	}
	for len(k) > 0 {
		if len(c.avail) == 0 {
			if err := c.refill(ctx); err != nil {
				return fmt.Errorf("ferret: Send: %w", err)
			}
		}
		n := copy(k, c.avail)
		c.avail = c.avail[n:]
		c.availBit += n
		c.used += uint64(n)
		k = k[n:]
	}
	return nil
}

// Recv draws the next len(m) COTs at the receiver: m[i] = M_i and choice
// bit i, packed, in b (at least BitWords(len(m)) words; the bits of the
// last word past len(m) are cleared).
func (c *COT) Recv(ctx context.Context, b []uint64, m []prg.Block) error {
	if c.role != Receiver {
		return errors.New("ferret: Recv on the sender's end of a COT stream")
	}
	if len(b) < bitvec.Words(len(m)) {
		return fmt.Errorf("ferret: Recv: %d choice words cannot hold %d choice bits", len(b), len(m))
	}
	if err := c.usable(); err != nil {
		return err
	}
	total := len(m)
	off := 0
	for off < total {
		if len(c.avail) == 0 {
			if err := c.refill(ctx); err != nil {
				return fmt.Errorf("ferret: Recv: %w", err)
			}
		}
		n := copy(m[off:], c.avail)
		bitvec.Copy(b, off, c.outBits, c.availBit, n)
		c.avail = c.avail[n:]
		c.availBit += n
		off += n
	}
	c.used += uint64(total)
	if r := total % 64; r != 0 {
		b[total/64] &= ^uint64(0) >> (64 - r)
	}
	return nil
}

// view draws up to n ≥ 1 of the next COTs without copying them: the
// returned blocks alias the reservoir and stay valid until the next draw;
// bit is the index in c.outBits of the first one's choice bit (receiver).
// A piece ends at the end of an iteration's outputs.
func (c *COT) view(ctx context.Context, n int) ([]prg.Block, int, error) {
	if err := c.usable(); err != nil {
		return nil, 0, err
	}
	if len(c.avail) == 0 {
		if err := c.refill(ctx); err != nil {
			return nil, 0, err
		}
	}
	k := min(n, len(c.avail))
	v, bit := c.avail[:k], c.availBit
	c.avail = c.avail[k:]
	c.availBit += k
	c.used += uint64(k)
	return v, bit, nil
}

// domain is the tweak high word for purpose and output block j.
func (c *COT) domain(purpose, j int) uint64 {
	return 1<<63 | uint64(purpose)<<56 | c.id<<16 | uint64(j)
}

// iterate runs one Ferret iteration with p on base COTs base (receiver: and
// their bits baseBits): outputs go to c.out[:p.N] (and c.outBits).
func (c *COT) iterate(ctx context.Context, p Params, cd *code, base []prg.Block, baseBits []uint64) error {
	h := p.LogBin
	per := 2*h + 1 // blocks per tree on the wire
	if c.role == Receiver {
		if cap(c.baseByte) < p.K {
			c.baseByte = make([]byte, p.K)
		}
		c.baseByte = c.baseByte[:p.K]
		spreadBits(c.baseByte, baseBits)
	}
	groups := (p.T + treesPerFrame - 1) / treesPerFrame
	// Waves of groups: with several workers, each takes wavePer consecutive
	// groups of the wave (few barriers on a busy machine); the frames go out
	// in order after the wave's trees are built.
	wavePer := 1
	if c.workers > 1 {
		wavePer = 4
	}
	wave := c.workers * wavePer
	c.msg = grow(c.msg, wave*treesPerFrame*per)
	c.hbuf = grow(c.hbuf, 2*c.workers*treesPerFrame*h)
	msgOf := func(g0, g int) []prg.Block { return c.msg[(g-g0)*treesPerFrame*per:] }
	// each runs f(g, w) for the wave's groups [g0, g1), worker w on its own
	// run of groups.
	each := func(g0, g1 int, f func(g, w int)) {
		c.parallel(min(c.workers, (g1-g0+wavePer-1)/wavePer), func(w int) {
			for g := g0 + w*wavePer; g < min(g1, g0+(w+1)*wavePer); g++ {
				f(g, w)
			}
		})
	}
	for g0 := 0; g0 < groups; g0 += wave {
		g1 := min(groups, g0+wave)
		if c.role == Sender {
			each(g0, g1, func(g, w int) { c.senderGroup(p, base, g, w, msgOf(g0, g)) })
			for g := g0; g < g1; g++ {
				nt := min(treesPerFrame, p.T-g*treesPerFrame)
				if err := c.conn.Send(ctx, prg.BlockBytes(msgOf(g0, g)[:nt*per])); err != nil {
					return err
				}
			}
			if err := c.conn.Flush(ctx); err != nil {
				return err
			}
			each(g0, g1, func(g, w int) { c.lpnGroup(p, cd, base, baseBits, g, w) })
		} else {
			for g := g0; g < g1; g++ {
				nt := min(treesPerFrame, p.T-g*treesPerFrame)
				if err := c.conn.Recv(ctx, prg.BlockBytes(msgOf(g0, g)[:nt*per])); err != nil {
					return err
				}
			}
			each(g0, g1, func(g, w int) {
				c.receiverGroup(p, base, baseBits, g, w, msgOf(g0, g))
				c.lpnGroup(p, cd, base, baseBits, g, w)
			})
		}
	}
	c.ggmCtr += uint64(p.T * h)
	if cd == c.main {
		c.iters++
	}
	return nil
}

// lpnGroup is the LPN step of group g's rows, run right after the group's
// trees (while its leaves are still in cache) by worker w: out ^= A·base[:K]
// on rows [g·16·2^h, (g+1)·16·2^h), whole index batches since 16·2^h ≥ 256.
func (c *COT) lpnGroup(p Params, cd *code, base []prg.Block, baseBits []uint64, g, w int) {
	out := c.out[:p.N]
	r0, r1 := g*treesPerFrame*p.Bin(), min(p.T, (g+1)*treesPerFrame)*p.Bin()
	if c.role == Sender {
		cd.applySender(c.lsc[w], out, base[:p.K], r0, r1)
	} else {
		cd.applyReceiver(c.lsc[w], out, base[:p.K], c.outBits, c.baseByte, r0, r1)
	}
}

// parallel runs f(0..n-1), on n goroutines when n > 1.
func (c *COT) parallel(n int, f func(w int)) {
	if n == 1 {
		f(0)
		return
	}
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() { defer wg.Done(); f(w) }()
	}
	wg.Wait()
}

// treesOf returns the trees of group g (their storage in out).
func treesOf(out []prg.Block, p Params, g int, dst [][]prg.Block) [][]prg.Block {
	dst = dst[:0]
	bin := p.Bin()
	for j := g * treesPerFrame; j < min(p.T, (g+1)*treesPerFrame); j++ {
		dst = append(dst, out[j*bin:(j+1)*bin])
	}
	return dst
}

// senderGroup expands the trees of group g from fresh random roots and
// writes their messages to msg: for tree j and level i (1..h), c_i^0 =
// K_i^0 ⊕ H(q) and c_i^1 = K_i^1 ⊕ H(q ⊕ Δ), where K_i^0, K_i^1 are the
// XORs of the level's left and right children and q is base COT
// K + j·h + i − 1; then Δ ⊕ (XOR of all leaves).
func (c *COT) senderGroup(p Params, base []prg.Block, g, w int, msg []prg.Block) {
	h, per := p.LogBin, 2*p.LogBin+1
	var tb [treesPerFrame][]prg.Block
	trees := treesOf(c.out, p, g, tb[:])
	e := c.exp[w]
	var roots [treesPerFrame]prg.Block
	c.wrng[w].Blocks(roots[:len(trees)])
	for j, t := range trees {
		t[0] = roots[j]
	}
	for lvl := 1; lvl <= h; lvl++ {
		e.level(trees, lvl)
		for j := range trees {
			msg[j*per+2*(lvl-1)] = e.sum0[j]
			msg[j*per+2*(lvl-1)+1] = e.sum1[j]
		}
	}
	for j := range trees {
		s := e.sum0[j].Xor(e.sum1[j])
		msg[j*per+2*h] = s.Xor(c.delta)
	}
	nt := len(trees)
	j0 := g * treesPerFrame
	q := base[p.K+j0*h : p.K+(j0+nt)*h]
	h0 := c.hbuf[2*w*treesPerFrame*h:][:nt*h]
	h1 := c.hbuf[(2*w+1)*treesPerFrame*h:][:nt*h]
	tw := prg.Tweak{Lo: c.ggmCtr + uint64(j0*h), Hi: c.domain(purposeGGM, 0)}
	c.hash.TCCRXor(h0, q, prg.Block{}, tw)
	c.hash.TCCRXor(h1, q, c.delta, tw)
	for j := 0; j < nt; j++ {
		for i := 0; i < h; i++ {
			m := msg[j*per+2*i:]
			m[0] = m[0].Xor(h0[j*h+i])
			m[1] = m[1].Xor(h1[j*h+i])
		}
	}
}

// receiverGroup rebuilds the punctured trees of group g from the sender's
// messages msg: tree j's path takes branch a_i = 1 − (choice bit of base
// COT K + j·h + i − 1) at level i, so its punctured leaf is
// α_j = Σ_i a_i·2^(i−1) (see expander); leaf α_j gets M = K_leaf ⊕ Δ, and
// output j·2^h + α_j is the tree's noise position: the group's choice bits
// are set to these unit vectors (the LPN step then adds A·r).
func (c *COT) receiverGroup(p Params, base []prg.Block, baseBits []uint64, g, w int, msg []prg.Block) {
	h, per := p.LogBin, 2*p.LogBin+1
	var tb [treesPerFrame][]prg.Block
	trees := treesOf(c.out, p, g, tb[:])
	nt := len(trees)
	j0 := g * treesPerFrame
	e := c.exp[w]
	t := base[p.K+j0*h : p.K+(j0+nt)*h]
	ht := c.hbuf[2*w*treesPerFrame*h:][:nt*h]
	c.hash.TCCRXor(ht, t, prg.Block{}, prg.Tweak{Lo: c.ggmCtr + uint64(j0*h), Hi: c.domain(purposeGGM, 0)})
	// The group's choice bits: the noise positions (the LPN step adds A·r).
	bin := p.Bin()
	clear(c.outBits[j0*bin/64 : ((j0+nt)*bin+63)/64])
	var alpha [treesPerFrame]int
	for j := range trees {
		a := 0
		for i := 0; i < h; i++ {
			r := int(bitvec.Bit(baseBits, p.K+(j0+j)*h+i))
			a |= (1 - r) << i
		}
		alpha[j] = a
		pos := (j0+j)*bin + a
		c.outBits[pos>>6] |= 1 << (pos & 63)
		trees[j][0] = prg.Block{}
	}
	for lvl := 1; lvl <= h; lvl++ {
		e.level(trees, lvl)
		half := 1 << (lvl - 1)
		for j, tr := range trees {
			path := alpha[j] & (half - 1) // the unknown node of level lvl−1
			a := alpha[j] >> (lvl - 1) & 1
			r := 1 - a
			k := msg[j*per+2*(lvl-1)+r].Xor(ht[j*h+lvl-1]) // K_lvl^r
			side := e.sum0[j]
			if r == 1 {
				side = e.sum1[j]
			}
			g0, g1 := tr[path], tr[path+half] // garbage children of the unknown node
			sib := k.Xor(side).Xor(tr[path+r*half])
			tr[path+r*half] = sib
			tr[path+a*half] = prg.Block{}
			if lvl == h {
				others := e.sum0[j].Xor(e.sum1[j]).Xor(g0).Xor(g1).Xor(sib)
				tr[alpha[j]] = msg[j*per+2*h].Xor(others)
			}
		}
	}
}

func grow(b []prg.Block, n int) []prg.Block {
	if cap(b) < n {
		return make([]prg.Block, n)
	}
	return b[:n]
}
