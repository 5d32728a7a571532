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

// protoVersion is 2 since the derived OTs moved to package ot (their hashes' tweaks and the
// framing of 1-of-N replies changed).
const protoVersion = 2

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
// whole Ferret iteration when it runs dry (and builds that iteration's
// outputs a unit at a time as they are drawn, see iteration). Both parties
// must draw the same numbers of COTs in the same order (a refill is a
// message from the sender to the receiver), interleaved in the same order
// with any other traffic on the connection. A COT is not safe for
// concurrent use.
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

	it       *iteration  // the iteration being handed out (shared with carved shares)
	itID     uint64      // it.id when c's range was set
	pos, end int         // c's next output and the end of its range in it
	base     []prg.Block // the next iteration's base COTs

	scratch [][]prg.Block // per worker: a frame of trees while an iteration is sent

	hold   bool   // a carved share: refills refused (see carve)
	ggmCtr uint64 // GGM OTs used so far (hash tweak)
	used   uint64 // COTs handed out so far
	iters  int    // main iterations run (ahead or not)
	online int    // main iterations run by a draw (on its critical path)
	nextID uint64 // the last iteration id given out

	// ahead holds the main iterations run ahead (see Ahead), oldest first:
	// a refill takes the next one instead of running an iteration. spare is
	// a retired iteration whose buffers the next run ahead reuses.
	ahead     []*iteration
	spare     *iteration
	aheadUsed int // iterations run ahead that a refill took
	builds    int // units built (tests)
	msg       []prg.Block
	hbuf      []prg.Block
	err       error
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
	if cfg.HasPre() {
		depth = max(depth, cfg.Pre.LogBin)
	}
	for range w {
		c.exp = append(c.exp, newExpander(depth, treesPerFrame))
		c.lsc = append(c.lsc, new(lpnScratch))
		c.wrng = append(c.wrng, rng.Split())
	}
	c.scratch = make([][]prg.Block, w)
	c.it = new(iteration)
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
		c.delta = s.Delta()
		if c.delta[0]&1 != 1 {
			return errors.New("ferret: the IKNP Δ has its low bit clear (package ot must set it)")
		}
		for i := range base {
			base[i][0] &^= 1
		}
	} else {
		baseBits := make([]uint64, bitvec.Words(m0)) // random choice bits
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
		for i := range base {
			base[i][0] = base[i][0]&^1 | bitvec.Bit(baseBits, i)
		}
	}
	c.base = base
	if !c.cfg.HasPre() {
		return nil // the first draw runs the first iteration
	}
	return c.iterate(ctx, c.cfg.Pre, c.pre)
}

// errRefillHeld is the error of a draw beyond a carved share.
var errRefillHeld = errors.New("ferret: a carved share of the reservoir ran dry (its caller drew more COTs than it had carved)")

// errStale is the error of a draw from a carved share after its parent
// refilled: the share's COTs were those of an iteration that is gone.
var errStale = errors.New("ferret: a carved share was drawn from after its reservoir refilled (carved shares must be used up before the parent draws past them)")

// carve returns a COT that hands out the next n available COTs of c (which
// skips them) and never refills. It shares c's iteration (and so its unit
// cache): it must be drawn from before c refills.
func (c *COT) carve(n int) *COT {
	d := *c
	d.hold = true
	d.end = c.pos + n
	c.pos += n
	c.used += uint64(n)
	return &d
}

// refill makes the next main iteration's outputs available: one run ahead
// if there is one (no communication), else one run now.
func (c *COT) refill(ctx context.Context) error {
	if c.hold {
		return c.fail(errRefillHeld)
	}
	if len(c.ahead) > 0 {
		c.take()
		return nil
	}
	if err := c.iterate(ctx, c.cfg.Main, c.main); err != nil {
		return c.fail(err)
	}
	return nil
}

// take makes the oldest iteration run ahead the one handed out. The
// retired one is marked dead (id 0), so that a carved share still holding
// it fails as stale, and its unit cache passes to the new one.
func (c *COT) take() {
	old, it := c.it, c.ahead[0]
	c.ahead[0] = nil
	c.ahead = c.ahead[1:]
	old.unbuild()
	if old.unit == it.unit && !it.built {
		// The slots' use times are on old's clock, which the new iteration continues (on a
		// clock of its own, its first claims would look least recently used).
		it.slots, old.slots = old.slots, nil
		it.clock = old.clock
		for i := range it.slots {
			it.slots[i].u = -1
		}
	}
	old.slots = nil
	old.id = 0
	c.spare = old
	c.it, c.itID = it, it.id
	c.pos, c.end = c.cfg.Main.Reserve(), it.p.N
	c.aheadUsed++
}

// Ahead runs n main iterations now, ahead of the draws that will need
// them: each sends its flight and builds the next one's base COTs, and is
// queued; a later refill takes the next queued iteration without any
// communication (its outputs are still built a unit at a time as they are
// drawn). Each queued iteration holds AheadBytes of memory. Both parties
// must call Ahead with the same n at the same point of the connection's
// traffic (it is the sender's flight).
func (c *COT) Ahead(ctx context.Context, n int) error {
	if err := c.usable(); err != nil {
		return err
	}
	if c.hold {
		return c.fail(errors.New("ferret: Ahead on a carved share of the reservoir"))
	}
	if n < 0 {
		return fmt.Errorf("ferret: Ahead: negative count %d", n)
	}
	for range n {
		it := c.spare
		c.spare = nil
		if it == nil {
			it = new(iteration)
		}
		it.slots = nil
		if err := c.run(ctx, it, c.cfg.Main, c.main); err != nil {
			return c.fail(fmt.Errorf("ferret: Ahead: %w", err))
		}
		c.ahead = append(c.ahead, it)
	}
	return nil
}

// unbuild returns a prebuilt iteration's cache to its usual size (its prebuilt units are
// dropped).
func (it *iteration) unbuild() {
	if !it.built {
		return
	}
	it.built, it.maxUnits = false, it.maxUnits0
	if n := it.size(); len(it.slots) > n {
		it.slots = it.slots[:n]
	}
}

// units returns the number of units of the iteration.
func (it *iteration) units() int { return (it.p.N + it.unit - 1) / it.unit }

// BuiltBytes is the memory of the outputs of units whole units at a party of role r (the
// blocks, and the receiver's choice bits).
func BuiltBytes(unit, units int, r Role) int64 {
	b := int64(units) * int64(unit) * 16
	if r == Receiver {
		b += int64(units) * int64(unit) / 8
	}
	return b
}

// prebuild builds units u0..u1−1 of it into its cache, which grows by as many units (it keeps
// its usual size for the units after them), as many of them as fit in budget bytes, and
// returns the bytes they take and the end of the units built (0, u0: none built). Local work
// only.
func (c *COT) prebuild(it *iteration, u0, u1 int, budget int64) (int64, int) {
	if it.built || u1 <= u0 || budget <= 0 {
		return 0, u0
	}
	u1 = u0 + int(min(int64(u1-u0), budget/BuiltBytes(it.unit, 1, c.role)))
	if u1 <= u0 {
		return 0, u0
	}
	need := BuiltBytes(it.unit, u1-u0, c.role)
	it.built, it.built0, it.built1, it.maxUnits0 = true, u0, u1, it.maxUnits
	it.maxUnits = min(it.units(), u1-u0+it.size())
	it.slots = it.slots[:0] // then slot i holds unit u0+i (find's fast path)
	saved := c.it
	c.it = it
	defer func() { c.it = saved }()
	// Batches of units built together (the LPN step's base reads stay in cache within one).
	const batch = 64
	for u := u0; u < u1; u += batch {
		c.prepare(u, min(u1, u+batch)-1)
	}
	// Not evicted before they are drawn (a draw sets a slot's use time).
	for i := range it.slots {
		it.slots[i].last = ^uint64(0)
	}
	return need, u1
}

// unitsFor returns the units of it that hold outputs [from, from+n), n ≥ 1 (capped at the end).
func (it *iteration) unitsFor(from int, n uint64) (u0, u1 int) {
	end := it.p.N
	if uint64(end-from) > n {
		end = from + int(n)
	}
	return from / it.unit, (end + it.unit - 1) / it.unit
}

// PrebuildCurrent builds now the units that hold the next n outputs of the iteration being
// handed out (all of them with n beyond its end), as many of them as fit in budget bytes, so
// that the draws that follow only copy them; it returns the bytes they take (0: nothing built)
// and the outputs they hold from the next one on. Local work: the peer need not do the same. Call it
// between draws (not while carved shares are in use).
func (c *COT) PrebuildCurrent(budget int64, n uint64) (int64, uint64) {
	if c.hold || c.pos >= c.end || c.it.unit == 0 || n == 0 {
		return 0, 0
	}
	u0, u1 := c.it.unitsFor(c.pos, n)
	b, u1 := c.prebuild(c.it, u0, u1, budget)
	if b == 0 {
		return 0, 0
	}
	return b, uint64(min(c.end, u1*c.it.unit) - c.pos)
}

// PrebuildQueued does the same for the oldest iteration run ahead whose outputs are not built
// yet: the units holding its first n outputs.
func (c *COT) PrebuildQueued(budget int64, n uint64) (int64, uint64) {
	if c.hold || n == 0 {
		return 0, 0
	}
	for _, it := range c.ahead {
		if it.built {
			continue
		}
		from := c.cfg.Main.Reserve()
		u0, u1 := it.unitsFor(from, n)
		b, u1 := c.prebuild(it, u0, u1, budget)
		if b == 0 {
			return 0, 0
		}
		return b, uint64(min(it.p.N, u1*it.unit) - from)
	}
	return 0, 0
}

// Prebuilt returns the memory the prebuilt outputs of the current and the queued iterations
// hold (see PrebuildCurrent).
func (c *COT) Prebuilt() int64 {
	var b int64
	for _, it := range append([]*iteration{c.it}, c.ahead...) {
		if it.built {
			b += BuiltBytes(it.unit, it.built1-it.built0, c.role)
		}
	}
	return b
}

// Queued returns the number of main iterations run ahead and not yet taken.
func (c *COT) Queued() int { return len(c.ahead) }

// OnlineIterations returns the number of main iterations run by a draw
// (a refill on the critical path, with its flight), and AheadTaken the
// number of iterations run ahead that refills took instead.
func (c *COT) OnlineIterations() int { return c.online }

// AheadTaken returns the number of iterations run ahead that refills took.
func (c *COT) AheadTaken() int { return c.aheadUsed }

// AheadBytes is the memory one main iteration run ahead holds at a party
// of role r until it is taken: its base COTs (Main.Reserve() blocks) and,
// at the sender, its GGM roots (T blocks) or, at the receiver, the
// sender's messages (T·(2·LogBin+1) blocks).
func AheadBytes(cfg Config, r Role) int64 {
	p := cfg.Main
	blocks := int64(p.Reserve())
	if r == Sender {
		blocks += int64(p.T)
	} else {
		blocks += int64(p.T) * int64(2*p.LogBin+1)
	}
	return 16 * blocks
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
func (c *COT) Available() int { return c.end - c.pos }

// drop skips the COTs left before the next refill (they are never used;
// Used counts them).
func (c *COT) drop() {
	c.used += uint64(c.end - c.pos)
	c.pos = c.end
}

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
	for len(k) > 0 {
		v, err := c.view(ctx, len(k), len(k))
		if err != nil {
			return fmt.Errorf("ferret: Send: %w", err)
		}
		k = k[copy(k, v.k):]
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
	total := len(m)
	for off := 0; off < total; {
		v, err := c.view(ctx, total-off, total-off)
		if err != nil {
			return fmt.Errorf("ferret: Recv: %w", err)
		}
		n := copy(m[off:], v.k)
		bitvec.Copy(b, off, v.bits, v.bit, n)
		off += n
	}
	if r := total % 64; r != 0 {
		b[total/64] &= ^uint64(0) >> (64 - r)
	}
	return nil
}

// piece is a run of consecutive COTs of the reservoir: k the sender's keys
// or the receiver's M_i, and (receiver) their choice bits, bit i of the
// piece being bit v.bit+i of v.bits.
type piece struct {
	k    []prg.Block
	bits []uint64
	bit  int
}

// view draws up to n ≥ 1 of the next COTs without copying them: the piece
// aliases the unit cache and stays valid until the next draw from c or
// from a COT carved from the same reservoir. A piece ends where a unit
// (one GGM tree, or unitRows outputs for smaller bins) ends. ahead is how
// many COTs the caller is about to draw in all (≥ n): the units they span
// are built together, up to half the cache, so that the LPN step's random
// reads of the base find it in cache from one unit to the next.
func (c *COT) view(ctx context.Context, n, ahead int) (piece, error) {
	if err := c.usable(); err != nil {
		return piece{}, err
	}
	if c.pos == c.end {
		if err := c.refill(ctx); err != nil {
			return piece{}, err
		}
	}
	it := c.it
	if it.id != c.itID {
		return piece{}, c.fail(errStale)
	}
	u := c.pos / it.unit
	// The units this draw spans (up to half the cache), built together.
	last := min((min(c.end, c.pos+max(n, ahead))-1)/it.unit, u+max(1, it.size()/2)-1)
	sl := &it.slots[c.prepare(u, last)]
	off := c.pos - u*it.unit
	k := min(n, c.end-c.pos, len(sl.k)-off)
	v := piece{k: sl.k[off : off+k], bits: sl.bits, bit: off}
	c.pos += k
	c.used += uint64(k)
	return v, nil
}

// domain is the tweak high word for purpose and output block j.
func (c *COT) domain(purpose, j int) uint64 {
	return 1<<63 | uint64(purpose)<<56 | c.id<<16 | uint64(j)
}

// iteration is what a COT keeps of the iteration it hands out: not its
// outputs (a B13 iteration's are 160 MB) but what rebuilds them, a unit
// at a time, when they are drawn — the base COTs, the sender's GGM roots,
// the receiver's copy of the sender's messages. Each unit (one GGM tree of
// outputs, or unitRows outputs of several trees for smaller bins) is
// expanded and put through the LPN step into a small cache of units when
// it is first drawn, so the outputs are produced while they are handed
// out, in a few MB that stay in cache, and a COT stream holds a few tens
// of MB. The cost: the sender expands each GGM tree twice (once for its
// messages when the iteration is sent, once when its outputs are drawn),
// about 2 fixed-key AES per output more. An iteration is shared by the
// COTs carved from the same reservoir (their draws go through the same
// unit cache).
type iteration struct {
	id    uint64 // counts the iterations of the stream (carved shares check it)
	p     Params
	cd    *code
	base  []prg.Block // its base COTs: K for the LPN step, then T·LogBin for the GGM OTs
	roots []prg.Block // sender: the GGM roots
	msg   []prg.Block // receiver: every tree's messages
	ggm0  uint64      // the GGM tweak counter of tree 0
	unit  int         // outputs per unit: max(2^LogBin, unitRows)

	slots    []unitSlot // the unit cache, least recently used evicted
	todo     []int      // prepare's scratch: the slots to build
	clock    uint64
	maxUnits int // the cache's size in units (0: unitCacheBytes' worth; tests set it)

	// built: units built0..built1−1 are in the cache (Prebuild), which holds them until they
	// are drawn, and as many more as before; maxUnits0 is maxUnits before.
	built          bool
	built0, built1 int
	maxUnits0      int
}

// unitSlot holds one unit of outputs.
type unitSlot struct {
	u    int    // the unit held (-1: none)
	last uint64 // iteration.clock at the last use
	k    []prg.Block
	bits []uint64 // receiver
}

// unitRows is the number of outputs per unit for bins up to that size (a
// unit is whole trees, expanded up to treesPerFrame at a time, and whole
// LPN batches).
const unitRows = 8192

// unitCacheBytes is the size of the unit cache of one COT stream: enough
// units that the chunks of an interleaved batch (each drawing from its own
// carved range) find their current unit still there in the next round.
const unitCacheBytes = 4 << 20

// size is the number of units the cache holds.
func (it *iteration) size() int {
	size := it.maxUnits
	if size == 0 {
		size = max(4, unitCacheBytes/(16*it.unit))
	}
	return min(size, (it.p.N+it.unit-1)/it.unit)
}

// find returns the index of the slot holding unit u, or -1.
func (it *iteration) find(u int) int {
	if it.built {
		// Prebuilt: unit built0+i is in slot i (until evicted once drawn).
		if i := u - it.built0; i >= 0 && i < len(it.slots) && it.slots[i].u == u {
			return i
		}
	}
	for i := range it.slots {
		if it.slots[i].u == u {
			return i
		}
	}
	return -1
}

// claim returns the index of a slot for unit u and whether it holds u
// already; a new claim takes a fresh slot while the cache is not full,
// else the least recently used one. Either way u becomes the most recently
// used.
func (c *COT) claim(u int) (int, bool) {
	it := c.it
	it.clock++
	if i := it.find(u); i >= 0 {
		it.slots[i].last = it.clock
		return i, true
	}
	i := -1
	if len(it.slots) < it.size() {
		sl := unitSlot{k: make([]prg.Block, it.unit)}
		if c.role == Receiver {
			sl.bits = make([]uint64, it.unit/64)
		}
		it.slots = append(it.slots, sl)
		i = len(it.slots) - 1
	} else {
		for j := range it.slots {
			if i < 0 || it.slots[j].last < it.slots[i].last {
				i = j
			}
		}
	}
	sl := &it.slots[i]
	sl.u, sl.last = u, it.clock
	sl.k = sl.k[:min(it.unit, it.p.N-u*it.unit)]
	return i, false
}

// prepare makes sure units u0..u1 (fewer than the cache holds) are in the
// cache, building the missing ones on up to c.workers goroutines, and
// returns the index of u0's slot.
func (c *COT) prepare(u0, u1 int) int {
	it := c.it
	todo := it.todo[:0]
	first, ok := c.claim(u0)
	if !ok {
		todo = append(todo, first)
	}
	for u := u0 + 1; u <= u1; u++ {
		if i, ok := c.claim(u); !ok {
			todo = append(todo, i)
		}
	}
	it.todo = todo
	if len(todo) == 0 {
		return first
	}
	c.builds += len(todo)
	nw := min(c.workers, len(todo))
	c.parallel(nw, func(w int) {
		for j := w; j < len(todo); j += nw {
			sl := &it.slots[todo[j]]
			c.build(sl.u*it.unit, sl.k, sl.bits, w)
		}
	})
	return first
}

// build computes outputs [r0, r0+len(dst)) of the current iteration (whole
// trees; r0 a multiple of the unit) into dst and, at the receiver, their
// choice bits into bits (bit 0 = output r0), with worker w's scratch: the
// GGM trees from the sender's roots or the receiver's messages, then the
// LPN step.
func (c *COT) build(r0 int, dst []prg.Block, bits []uint64, w int) {
	it := c.it
	p := it.p
	bin, per := p.Bin(), 2*p.LogBin+1
	j0, j1 := r0/bin, min(p.T, (r0+len(dst)+bin-1)/bin)
	var tb [treesPerFrame][]prg.Block
	for j0 < j1 {
		// at most a frame of trees per expansion (the expander's batch)
		j2 := min(j1, j0+treesPerFrame)
		trees := splitTrees(&tb, dst[j0*bin-r0:], bin, j2-j0)
		if c.role == Sender {
			c.expandSender(it, j0, trees, w, nil)
		} else {
			c.expandReceiver(it, j0, trees, w, it.msg[j0*per:])
		}
		j0 = j2
	}
	c.outputs(it, r0, dst, bits, w)
}

// splitTrees returns the first nt ≤ treesPerFrame trees of 2^LogBin = bin
// blocks each held one after another in v, as slices in tb.
func splitTrees(tb *[treesPerFrame][]prg.Block, v []prg.Block, bin, nt int) [][]prg.Block {
	trees := tb[:0]
	for j := range nt {
		trees = append(trees, v[j*bin:(j+1)*bin])
	}
	return trees
}

// outputs turns expanded trees into outputs [r0, r0+len(dst)): the
// sender's leaves lose their low bit (the receiver's expansion already set
// its low bits, see clearLSB), then the LPN step.
func (c *COT) outputs(it *iteration, r0 int, dst []prg.Block, bits []uint64, w int) {
	if c.role == Sender {
		clearLSB(dst)
	}
	c.lpn(it, r0, dst, bits, w)
}

// lpn is the LPN step on outputs [r0, r0+len(dst)) (r0 a multiple of
// lpnRows) held in dst (receiver: their bits in bits, bit 0 = output r0),
// by worker w: dst ^= A·base[:K] on those rows.
func (c *COT) lpn(it *iteration, r0 int, dst []prg.Block, bits []uint64, w int) {
	it.cd.apply(c.lsc[w], dst, it.base[:it.p.K], r0, r0+len(dst))
	if c.role == Receiver && bits != nil {
		packLSB(bits, dst)
	}
}

// packLSB sets bits (⌈len(v)/64⌉ words) to the low bits of the blocks of v,
// the receiver's choice bits.
func packLSB(bits []uint64, v []prg.Block) {
	for w := 0; w*64 < len(v); w++ {
		s := v[w*64 : min(len(v), w*64+64)]
		var x uint64
		for j := range s {
			x |= (s[j][0] & 1) << j
		}
		bits[w] = x
	}
}

// iterate runs one Ferret iteration with p into the iteration being handed
// out, on the critical path of the draw that needs it (see run), and makes
// its outputs available.
func (c *COT) iterate(ctx context.Context, p Params, cd *code) error {
	c.it.unbuild()
	if err := c.run(ctx, c.it, p, cd); err != nil {
		return err
	}
	if cd == c.main {
		c.online++
	}
	c.itID = c.it.id
	c.pos, c.end = c.cfg.Main.Reserve(), p.N
	return nil
}

// run runs one Ferret iteration with p into it on the base COTs in c.base
// (receiver: their choice bits are their low bits), which it takes over:
// the sender sends every tree's messages (one flight), both parties build
// the iteration's first Main.Reserve() outputs (with their bits) into
// c.base as the next iteration's base, and it keeps what rebuilds the rest
// a unit at a time as they are drawn (see iteration).
func (c *COT) run(ctx context.Context, it *iteration, p Params, cd *code) error {
	it.base, c.base = c.base, it.base
	keep := c.cfg.Main.Reserve()
	c.base = grow(c.base, keep)
	c.nextID++
	it.id = c.nextID
	it.p, it.cd, it.ggm0 = p, cd, c.ggmCtr
	if u := max(p.Bin(), unitRows); u != it.unit {
		it.unit, it.slots = u, nil
	}
	for i := range it.slots {
		it.slots[i].u = -1
	}
	h := p.LogBin
	per := 2*h + 1 // blocks per tree on the wire
	if c.role == Receiver {
		it.msg = grow(it.msg, p.T*per)
	} else {
		it.roots = grow(it.roots, p.T)
	}
	groups := (p.T + treesPerFrame - 1) / treesPerFrame
	frameRows := treesPerFrame * p.Bin()
	// The groups (frames) that hold outputs of the reserve are built now;
	// the others are only expanded by the sender for their messages.
	keepRows := min(p.N, (keep+lpnRows-1)/lpnRows*lpnRows)
	group := func(g, w int, msg []prg.Block) {
		r0 := g * frameRows
		j0, j1 := g*treesPerFrame, min(p.T, (g+1)*treesPerFrame)
		c.scratch[w] = grow(c.scratch[w], (j1-j0)*p.Bin())
		dst := c.scratch[w]
		var tb [treesPerFrame][]prg.Block
		trees := splitTrees(&tb, dst, p.Bin(), j1-j0)
		if c.role == Sender {
			c.wrng[w].Blocks(it.roots[j0:j1])
			c.expandSender(it, j0, trees, w, msg)
		} else {
			c.expandReceiver(it, j0, trees, w, msg)
		}
		if r0 >= keepRows {
			return
		}
		rows := min(len(dst), keepRows-r0)
		c.outputs(it, r0, dst[:rows], nil, w)
		n := min(rows, keep-r0)
		copy(c.base[r0:r0+n], dst[:n])
	}
	// Waves of groups: with several workers, each takes wavePer consecutive
	// groups of the wave (few barriers on a busy machine); the sender's
	// frames go out in order after the wave's trees are built.
	wavePer := 1
	if c.workers > 1 {
		wavePer = 4
	}
	wave := c.workers * wavePer
	if c.role == Sender {
		c.msg = grow(c.msg, wave*treesPerFrame*per)
	}
	msgOf := func(g0, g int) []prg.Block {
		if c.role == Receiver {
			return it.msg[g*treesPerFrame*per:]
		}
		return c.msg[(g-g0)*treesPerFrame*per:]
	}
	c.hbuf = grow(c.hbuf, 2*c.workers*treesPerFrame*h)
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
			each(g0, g1, func(g, w int) { group(g, w, msgOf(g0, g)) })
			for g := g0; g < g1; g++ {
				nt := min(treesPerFrame, p.T-g*treesPerFrame)
				if err := c.conn.Send(ctx, prg.BlockBytes(msgOf(g0, g)[:nt*per])); err != nil {
					return err
				}
			}
			if err := c.conn.Flush(ctx); err != nil {
				return err
			}
		} else {
			for g := g0; g < g1; g++ {
				nt := min(treesPerFrame, p.T-g*treesPerFrame)
				if err := c.conn.Recv(ctx, prg.BlockBytes(msgOf(g0, g)[:nt*per])); err != nil {
					return err
				}
			}
			each(g0, g1, func(g, w int) {
				if g*frameRows < keepRows {
					group(g, w, msgOf(g0, g))
				}
			})
		}
	}
	c.ggmCtr += uint64(p.T * h)
	if cd == c.main {
		c.iters++
	}
	return nil
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

// expandSender expands the GGM trees j0, j0+1, … of the current iteration
// (one slice of 2^LogBin blocks each, in trees) from their roots with
// worker w's expander and, if msg is not nil, writes their messages to
// msg: for tree j and level i (1..h), c_i^0 = K_i^0 ⊕ H(q) and c_i^1 =
// K_i^1 ⊕ H(q ⊕ Δ), where K_i^0, K_i^1 are the XORs of the level's left
// and right children and q is base COT K + j·h + i − 1; then Δ ⊕ (XOR of
// all leaves).
func (c *COT) expandSender(it *iteration, j0 int, trees [][]prg.Block, w int, msg []prg.Block) {
	p := it.p
	h, per := p.LogBin, 2*p.LogBin+1
	e := c.exp[w]
	for j, t := range trees {
		t[0] = it.roots[j0+j]
	}
	for lvl := 1; lvl <= h; lvl++ {
		e.expand(trees, lvl, msg != nil)
		if msg == nil {
			continue
		}
		for j := range trees {
			msg[j*per+2*(lvl-1)] = e.sum0[j]
			msg[j*per+2*(lvl-1)+1] = e.sum1[j]
		}
	}
	if msg == nil {
		return
	}
	for j := range trees {
		s := e.sum0[j].Xor(e.sum1[j])
		msg[j*per+2*h] = s.Xor(c.delta)
	}
	nt := len(trees)
	q := it.base[p.K+j0*h : p.K+(j0+nt)*h]
	h0 := c.hbuf[2*w*treesPerFrame*h:][:nt*h]
	h1 := c.hbuf[(2*w+1)*treesPerFrame*h:][:nt*h]
	tw := prg.Tweak{Lo: it.ggm0 + uint64(j0*h), Hi: c.domain(purposeGGM, 0)}
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

// expandReceiver rebuilds the punctured GGM trees j0, j0+1, … of the
// current iteration into trees from the sender's messages msg (tree j0's
// first): tree j's path takes branch a_i = 1 − (choice bit of base COT
// K + j·h + i − 1) at level i, so its punctured leaf is α_j =
// Σ_i a_i·2^(i−1) (see expander); leaf α_j gets M = K_leaf ⊕ Δ, and its
// output is the tree's noise position. Then the leaves' low bits become
// the unit vector of the noise (see clearLSB); the LPN step adds A·r.
func (c *COT) expandReceiver(it *iteration, j0 int, trees [][]prg.Block, w int, msg []prg.Block) {
	p := it.p
	h, per := p.LogBin, 2*p.LogBin+1
	nt := len(trees)
	e := c.exp[w]
	t := it.base[p.K+j0*h : p.K+(j0+nt)*h]
	ht := c.hbuf[2*w*treesPerFrame*h:][:nt*h]
	c.hash.TCCRXor(ht, t, prg.Block{}, prg.Tweak{Lo: it.ggm0 + uint64(j0*h), Hi: c.domain(purposeGGM, 0)})
	var alpha [treesPerFrame]int
	for j := range trees {
		a := 0
		for i := 0; i < h; i++ {
			r := int(t[j*h+i][0] & 1) // the base COT's choice bit
			a |= (1 - r) << i
		}
		alpha[j] = a
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
	for j, tr := range trees {
		clearLSB(tr)
		tr[alpha[j]][0] |= 1
	}
}

// clearLSB clears the low bit of every block of v.
//
// The choice bit of a COT is the low bit of the receiver's block: Δ's low
// bit is 1 (package ot sets it) and every sender key has its low bit
// clear, so M = K ⊕ b·Δ has low bit b. The IKNP base COTs are brought to
// that form (the sender clears the bit, the receiver sets it to its choice
// bit), and an iteration keeps it: the sender clears the low bits of its
// GGM leaves (after their sums went into its messages), the receiver
// clears those of its leaves but the punctured one, whose bit it sets
// (v ⊕ Δ with v's bit clear), and the LPN step adds up blocks of the same
// form. So the receiver's choice bits need no work of their own: they
// come with the blocks through the LPN step (as in emp-ot).
func clearLSB(v []prg.Block) {
	for i := range v {
		v[i][0] &^= 1
	}
}

func grow(b []prg.Block, n int) []prg.Block {
	if cap(b) < n {
		return make([]prg.Block, n)
	}
	return b[:n]
}
