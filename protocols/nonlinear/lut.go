package nonlinear

import (
	"context"
	"fmt"
)

// MaxLUTBits bounds the index width of LUT (tables of up to 256 entries).
const MaxLUTBits = 8

// lutReq is a batch of table lookups by (2^bits choose 1)-OT_l (SIRNN's LUT protocol): the OT
// sender S, holding index shares a_i and fresh random r_i, offers for every possible receiver
// share j the message T[(a_i + j) mod 2^bits] − r_i; the receiver chooses its own share b_i and
// gets T[a_i + b_i] − r_i, S keeps r_i. Either party can be the sender.
type lutReq struct {
	st     *stream
	idx    []uint64 // this party's index shares (low bits used)
	bits   int
	tables [][]uint64
	group  func(i int) int // table of element i
	out    []uint64        // this party's shares of the results
}

func (q *lutReq) kind() (int, int) { return 1 << q.bits, q.st.r.Bits }
func (q *lutReq) size() int        { return len(q.idx) }

func (q *lutReq) send(msgs []uint64) {
	N := 1 << q.bits
	mask := uint64(N - 1)
	r := q.st.randWords(len(q.idx), q.st.r.Bits)
	rm := q.st.r.Mask()
	for i, a := range q.idx {
		t := q.tables[q.group(i)]
		row := msgs[i*N : (i+1)*N]
		for j := range row {
			row[j] = (t[(a+uint64(j))&mask] - r[i]) & rm
		}
		q.out[i] = r[i]
	}
}

func (q *lutReq) choose(c []uint8) {
	mask := uint64(1)<<q.bits - 1
	for i, b := range q.idx {
		c[i] = uint8(b & mask)
	}
}

func (q *lutReq) receive(out []uint64) { copy(q.out, out) }

// LUT sets dst[i] to shares (mod 2^l) of tables[g][x mod 2^bits], where x is the value shared by
// idx[i] and g = i / (len(idx)/len(tables)): the vector is len(tables) groups of equal length, one
// per public table of 2^bits ring elements (1 ≤ bits ≤ MaxLUTBits). All lookups are one OT batch.
// Communication per lookup: one (2^bits choose 1)-OT_l (Plan.LUT; on IKNP 2λ + 2^bits·l bits).
func (s *Session) LUT(ctx context.Context, dst, idx []uint64, bits int, tables [][]uint64) error {
	const op = "LUT"
	if err := s.usable(op); err != nil {
		return err
	}
	if err := checkLen(op, "dst", dst, len(idx)); err != nil {
		return err
	}
	if bits < 1 || bits > MaxLUTBits {
		return fmt.Errorf("nonlinear: %s: index of %d bits (1..%d)", op, bits, MaxLUTBits)
	}
	if len(tables) == 0 || len(idx)%len(tables) != 0 {
		return fmt.Errorf("nonlinear: %s: %d lookups do not split into %d tables", op, len(idx), len(tables))
	}
	for g, t := range tables {
		if len(t) != 1<<bits {
			return fmt.Errorf("nonlinear: %s: table %d has %d entries, want %d", op, g, len(t), 1<<bits)
		}
	}
	per := max(1, len(idx)/len(tables))
	return s.run(ctx, op, s.parts(len(idx), 64), func(ctx context.Context, st *stream, lo, hi int) error {
		return st.chunks(ctx, hi-lo, st.chunkSize(1<<bits), func(ctx context.Context, st *stream, a, b int) error {
			base := lo + a
			q := &lutReq{st: st, idx: idx[base : lo+b], bits: bits, tables: tables, out: dst[base : lo+b],
				group: func(i int) int { return (base + i) / per }}
			return st.runOTN(ctx, q)
		})
	})
}

// LUT is one table lookup with an index of bits bits over Z_2^l.
func (p Plan) LUT(bits, l int) Cost { return p.OT.otn(1<<bits, l) }
