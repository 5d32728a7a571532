package selfdeal

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
)

// Shape is the shape of dealt OTs: N messages of W words of L bits each.
type Shape struct{ N, W, L int }

func (k Shape) String() string { return fmt.Sprintf("1-of-%d×%d×%d-bit", k.N, k.W, k.L) }

// Entry is Count OTs of one shape whose sender is party Sender.
type Entry struct {
	Sender int    `json:"sender"`
	N      int    `json:"n"`
	W      int    `json:"w"`
	L      int    `json:"l"`
	Count  uint64 `json:"count"`
}

// Shape is the entry's shape.
func (e Entry) Shape() Shape { return Shape{e.N, e.W, e.L} }

// Plan is the correlations of one OT stream: OTs per shape and direction, regular triples and
// correlated pairs. Its entries are sorted (sender, N, W, L), one per sequence.
type Plan struct {
	OTs     []Entry `json:"ots,omitempty"`
	Triples uint64  `json:"triples,omitempty"`
	Pairs   uint64  `json:"pairs,omitempty"`
}

func (p *Plan) sort() {
	slices.SortFunc(p.OTs, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Sender, b.Sender), cmp.Compare(a.N, b.N), cmp.Compare(a.W, b.W), cmp.Compare(a.L, b.L))
	})
}

// count returns the entry of sequence d, or 0.
func (p Plan) count(d dir) uint64 {
	for _, e := range p.OTs {
		if e.Sender == d.sender && e.Shape() == d.k {
			return e.Count
		}
	}
	return 0
}

// Bytes is the memory the plan's correlations take at both parties together (the OTs' sender and
// receiver ends, both parties' triple shares): what the bound on the offline phase counts, alike
// at both parties.
func (p Plan) Bytes() int64 {
	var b int64
	for _, e := range p.OTs {
		b += e.Shape().bytes(e.Count)
	}
	return b + 2*int64((3*p.Triples+5*p.Pairs+7)/8)
}

// Empty reports whether the plan holds nothing.
func (p Plan) Empty() bool { return len(p.OTs) == 0 && p.Triples == 0 && p.Pairs == 0 }

// Merge is the plan with the larger count of a and b for every sequence.
func Merge(a, b Plan) Plan {
	out := Plan{Triples: max(a.Triples, b.Triples), Pairs: max(a.Pairs, b.Pairs)}
	for _, e := range a.OTs {
		e.Count = max(e.Count, b.count(dir{e.Sender, e.Shape()}))
		out.OTs = append(out.OTs, e)
	}
	for _, e := range b.OTs {
		if a.count(dir{e.Sender, e.Shape()}) == 0 {
			out.OTs = append(out.OTs, e)
		}
	}
	out.sort()
	return out
}

// Need is what to make so that want is held, given what is held already, with the memory of
// held plus what is made within capBytes: the streams' entries in order (each stream's OTs, then
// its triples) while they fit, the first that does not fit cut to what does. It returns the
// plans to make, per stream, and the bytes of want that the bound left out. Both parties compute
// it alike from the same arguments.
func Need(want, held []Plan, capBytes int64) (need []Plan, capped int64) {
	var used int64
	for _, h := range held {
		used += h.Bytes()
	}
	need = make([]Plan, len(want))
	fit := func(full uint64, per func(uint64) int64) uint64 {
		if full == 0 {
			return 0
		}
		b := per(full)
		if used+b <= capBytes {
			used += b
			return full
		}
		// The largest count that fits (per is monotone).
		lo, hi := uint64(0), full
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			if used+per(mid) <= capBytes {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		used += per(lo)
		capped += b - per(lo)
		return lo
	}
	for i, w := range want {
		var h Plan
		if i < len(held) {
			h = held[i]
		}
		for _, e := range w.OTs {
			have := h.count(dir{e.Sender, e.Shape()})
			if e.Count <= have {
				continue
			}
			k := e.Shape()
			e.Count = fit(e.Count-have, k.bytes)
			if e.Count > 0 {
				need[i].OTs = append(need[i].OTs, e)
			}
		}
		if w.Triples > h.Triples {
			need[i].Triples = fit(w.Triples-h.Triples, func(n uint64) int64 { return Plan{Triples: n}.Bytes() })
		}
		if w.Pairs > h.Pairs {
			need[i].Pairs = fit(w.Pairs-h.Pairs, func(n uint64) int64 { return Plan{Pairs: n}.Bytes() })
		}
	}
	return need, capped
}

// maxPlanBytes bounds an encoded plan set.
const maxPlanBytes = 1 << 20

// EncodePlans encodes the plans of a session's streams (nil: none).
func EncodePlans(p []Plan) ([]byte, error) { return json.Marshal(p) }

// DecodePlans decodes EncodePlans's output, checking every entry.
func DecodePlans(b []byte) ([]Plan, error) {
	if len(b) > maxPlanBytes {
		return nil, fmt.Errorf("selfdeal: a plan of %d bytes (at most %d)", len(b), maxPlanBytes)
	}
	var p []Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("selfdeal: decoding a plan: %w", err)
	}
	for i := range p {
		if err := p[i].Check(); err != nil {
			return nil, fmt.Errorf("selfdeal: plan of stream %d: %w", i, err)
		}
	}
	return p, nil
}

// maxCount bounds the instances of one entry (and the triples of a plan).
const maxCount = 1 << 36

// Check validates the plan's entries and sorts them.
func (p *Plan) Check() error {
	seen := map[dir]bool{}
	for _, e := range p.OTs {
		d := dir{e.Sender, e.Shape()}
		if err := d.k.valid(); err != nil {
			return err
		}
		if e.Sender != 0 && e.Sender != 1 {
			return fmt.Errorf("an entry of sender %d", e.Sender)
		}
		if e.Count > maxCount {
			return fmt.Errorf("%d OTs of %v (at most %d)", e.Count, d.k, uint64(maxCount))
		}
		if seen[d] {
			return fmt.Errorf("two entries of %v sent by party %d", d.k, d.sender)
		}
		seen[d] = true
	}
	if p.Triples > maxCount || p.Pairs > maxCount {
		return fmt.Errorf("%d triples and %d pairs (at most %d)", p.Triples, p.Pairs, uint64(maxCount))
	}
	p.sort()
	return nil
}
