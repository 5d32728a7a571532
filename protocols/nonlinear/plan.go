package nonlinear

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/ferret"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
)

// Cost formulas per OT source, and the choice of the protocol plan
// (millionaires' leaf width m, how bit triples are made) that they imply.
//
// With IKNP every OT pays λ = 128 bits of extension matrix, so CrypTFlow2's
// plan packs as much as it can into few 1-out-of-N OTs: KK13 digit OTs,
// triples two per (16 choose 1)-OT_2. With silent OT (Ferret) a correlated
// OT costs well under a bit of refill traffic, a derived 1-out-of-2^m OT_l
// costs m COTs, m derandomisation bits and 2^m·l bits of messages, and a
// random OT costs one COT and nothing else (Cheetah §4–5 exploit the same
// shift): digits of 2–3 bits minimise the traffic, and a bit triple is
// cheapest from two random OTs, one in each direction (no message at all).
//
// Every quantity is exact: a Cost counts the bits a protocol puts on the
// wire itself and the COTs it draws from a silent source; the refill
// traffic of those COTs is IterationBytes per Output COTs of the source's
// parameter set (see package ferret), reported apart because it comes in
// whole iterations.

// OTCost describes an OT source for the cost formulas.
type OTCost struct {
	// Silent is true for silent OT (Ferret): derived OTs send only their
	// messages and derandomisation bits and draw COTs from the reservoir.
	// False is IKNP with KK13 (package ot): λ = 128 bits per OT.
	Silent bool
	// COTBits is a silent source's amortised refill traffic per COT, in
	// bits: 8·IterationBytes/Output of its main iteration. Zero for IKNP.
	COTBits float64
	// Dealt is true for correlations a helper deals (the three-party mode, package dealer):
	// derived OTs cost what they cost on silent OT, and the COTs and bit triples come from the
	// helper, so none of them is traffic between the two data parties.
	Dealt bool
	// Name is for reports: "iknp", "dealt" or the Ferret parameter set's name.
	Name string
}

// IKNPCost is the cost model of IKNP OT extension (package ot).
func IKNPCost() OTCost { return OTCost{Name: "iknp"} }

// FerretCost is the cost model of Ferret silent OT with parameter set cfg.
func FerretCost(cfg ferret.Config) OTCost {
	return OTCost{Silent: true, Name: "ferret-" + cfg.Name,
		COTBits: 8 * float64(ferret.IterationBytes(cfg.Main)) / float64(cfg.Main.Output())}
}

// DealtCost is the cost model of dealt correlations between the two data parties (the
// three-party mode): only the derandomisation bits, the OTs' messages and the masked bits of the
// ANDs cross between them.
func DealtCost() OTCost { return OTCost{Silent: true, Dealt: true, Name: "dealt"} }

// SourceCost returns the cost model of an OT source: Ferret for a
// session on a Ferret core (with its parameter set), IKNP otherwise.
func SourceCost(o *ot.Session) OTCost {
	if f := ferret.CoreOf(o); f != nil {
		return FerretCost(f.Config())
	}
	return IKNPCost()
}

// Cost is a protocol's communication per element: Bits that the protocol
// itself puts on the wire (both directions, no framing) and COTs drawn from
// a silent source (zero with IKNP, whose OTs are paid in Bits).
type Cost struct {
	Bits, COTs int
}

// Add returns c + d.
func (c Cost) Add(d Cost) Cost { return Cost{c.Bits + d.Bits, c.COTs + d.COTs} }

// Scale returns k·c.
func (c Cost) Scale(k int) Cost { return Cost{k * c.Bits, k * c.COTs} }

// Total is the amortised bits per element on the source o, refills included.
func (c Cost) Total(o OTCost) float64 { return float64(c.Bits) + float64(c.COTs)*o.COTBits }

// Plan is what the protocols' traffic depends on: the OT source, the
// millionaires' leaf width and how bit triples are made. Its methods are
// the exact per-element costs (compare the package-level IKNP formulas,
// which are Plan{OT: IKNPCost(), M: m} with Bits only).
type Plan struct {
	OT OTCost
	// M is the millionaires' leaf width.
	M int
	// ROTTriples makes bit triples from two random OTs each (one per
	// direction) instead of 1-out-of-N OTs (App. A.1, A.2).
	ROTTriples bool
}

// otn is one 1-out-of-N OT_l.
func (o OTCost) otn(N, l int) Cost {
	if !o.Silent {
		return Cost{Bits: otnBits(N, l)}
	}
	m := log2(N)
	return Cost{Bits: m + N*l, COTs: m}
}

// cot is one COT_l with the receiver's choice bit.
func (o OTCost) cot(l int) Cost {
	if !o.Silent {
		return Cost{Bits: cotBits(l)}
	}
	return Cost{Bits: 1 + l, COTs: 1}
}

// rot is one random OT.
func (o OTCost) rot() Cost {
	if !o.Silent {
		return Cost{Bits: lambda}
	}
	return Cost{COTs: 1}
}

func log2(N int) int {
	m := 0
	for 1<<m < N {
		m++
	}
	return m
}

// regAND is one AND with a regular triple: the triple and the 2+2 masked
// bits.
func (p Plan) regAND() Cost {
	if p.OT.Dealt {
		return Cost{Bits: 4}
	}
	if p.ROTTriples {
		return p.OT.rot().Scale(2).Add(Cost{Bits: 4})
	}
	t := p.OT.otn(16, 2) // two triples per instance
	return Cost{Bits: t.Bits/2 + 4, COTs: t.COTs / 2}
}

// corrAND is two ANDs with a correlated pair: the pair and 3+3 masked bits.
func (p Plan) corrAND() Cost {
	if p.OT.Dealt {
		return Cost{Bits: 6}
	}
	if p.ROTTriples {
		return p.OT.rot().Scale(2).Add(Cost{Bits: 6})
	}
	return p.OT.otn(8, 2).Add(Cost{Bits: 6})
}

// tree is one comparison with the given digits and combination tree.
func (p Plan) tree(widths []int, levels [][]treeOp) Cost {
	var c Cost
	for j, w := range widths {
		l := 2
		if j == 0 {
			l = 1
		}
		c = c.Add(p.OT.otn(1<<w, l))
	}
	for _, ops := range levels {
		for _, op := range ops {
			switch {
			case op.hi < 0:
			case op.lo == 0:
				c = c.Add(p.regAND())
			default:
				c = c.Add(p.corrAND())
			}
		}
	}
	return c
}

// Millionaires is one comparison of b-bit values.
func (p Plan) Millionaires(b int) Cost {
	if b <= 0 {
		return Cost{}
	}
	g := newMillGroup(nil, b, p.M, true)
	return p.tree(g.widths, g.levels)
}

// B2A is one boolean-to-arithmetic conversion into Z_2^l (one COT_l).
func (p Plan) B2A(l int) Cost { return p.OT.cot(l) }

// MUX is one multiplexer over Z_2^l (two COT_l).
func (p Plan) MUX(l int) Cost { return p.OT.cot(l).Scale(2) }

// ReLU is DReLU (a millionaires' of l−1 bits) and a MUX.
func (p Plan) ReLU(l int) Cost { return p.Millionaires(l - 1).Add(p.MUX(l)) }

// ReLULow is ReLU over Z_2^l of operands known to be signed b-bit values:
// DReLU on the low b bits (a millionaires' of b−1 bits) and a MUX in Z_2^l.
func (p Plan) ReLULow(b, l int) Cost { return p.Millionaires(b - 1).Add(p.MUX(l)) }

// ReLUTrunc is ReLU of b-bit operands (b = l: any) followed by truncation by s of the
// non-negative result, fused (Session.ReLUTrunc): the DReLU's comparison of b−1 bits split at s
// and two (4 choose 1)-OT_l. It needs 1 ≤ s < b−1 (Session.ReLUTruncFuses).
func (p Plan) ReLUTrunc(b, l, s int) Cost {
	g := newShallowSplitGroup(nil, b-1, s, p.M, true)
	return p.tree(g.widths, g.levels).Add(p.OT.otn(4, l).Scale(2))
}

// Trunc is truncation by 0 < s < l (see TruncBits).
func (p Plan) Trunc(l, s int, knownNonNeg bool) Cost {
	if knownNonNeg {
		return p.Millionaires(s).Add(p.OT.cot(l)).Add(p.OT.cot(s))
	}
	g := newSplitGroup(nil, l, s, p.M, true)
	return p.tree(g.widths, g.levels).Add(p.OT.cot(l)).Add(p.OT.cot(s))
}

// MaxRows is the row maximum of d elements: d−1 ReLU-sized steps (a DReLU
// of the difference and a MUX each).
func (p Plan) MaxRows(l, d int) Cost { return p.ReLU(l).Scale(d - 1) }

// Div is division by a public d that is not a power of two (see DivBits).
func (p Plan) Div(l int, d uint64) Cost {
	delta := divDelta(d)
	return p.Millionaires(l - 1).Add(p.OT.otn(4, max(l, delta))).Add(p.Millionaires(delta - 1).Scale(3)).Add(p.OT.cot(l).Scale(3))
}

// ArgMaxRows is the row argmax of d elements: MaxRows with the index
// carried in the MUX (one COT of two l-bit words per step instead of one).
func (p Plan) ArgMaxRows(l, d int) Cost {
	return p.MaxRows(l, d).Add(Cost{Bits: 2 * l * (d - 1)})
}

func (p Plan) String() string {
	t := "OT-N triples"
	if p.ROTTriples {
		t = "ROT triples"
	}
	return fmt.Sprintf("%s, m=%d, %s", p.OT.Name, p.M, t)
}

// ChoosePlan picks the plan for Z_2^l on OT source o. With IKNP it is
// CrypTFlow2's: m = DefaultM (m = 7 would send less but costs about three
// times the computation) and triples from 1-out-of-N OTs. With a silent
// source it considers every m in 1..MaxM and both triple constructions,
// prices ReLU exactly (Plan.ReLU(l).Total), and among the plans within
// PlanSlack of the least traffic takes the one that draws the fewest COTs
// (generating COTs is most of silent OT's computation), ties to the smaller
// m. Both parties compute the same plan from the same source and ring.
func ChoosePlan(o OTCost, l int) Plan {
	if !o.Silent {
		return Plan{OT: o, M: DefaultM}
	}
	var plans []Plan
	least := 0.0
	for m := 1; m <= MaxM; m++ {
		for _, rot := range []bool{true, false} {
			p := Plan{OT: o, M: m, ROTTriples: rot}
			if b := p.ReLU(l).Total(o); len(plans) == 0 || b < least {
				least = b
			}
			plans = append(plans, p)
		}
	}
	var best Plan
	bestCOTs := -1
	for _, p := range plans {
		c := p.ReLU(l)
		if c.Total(o) <= least*(1+PlanSlack) && (bestCOTs < 0 || c.COTs < bestCOTs) {
			best, bestCOTs = p, c.COTs
		}
	}
	return best
}

// PlanSlack is the traffic ChoosePlan gives up, as a fraction of the least,
// to draw fewer COTs (B13, l = 32: m = 3 at 328.4 bits and 53 COTs per ReLU
// instead of m = 2 at 326.8 bits and 63 COTs).
const PlanSlack = 0.01
