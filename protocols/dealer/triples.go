package dealer

import (
	"context"
	"fmt"
	"sync"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// Triples deals Beaver bit triples to a data party (it implements nonlinear.TripleDealer):
// party 0's shares come from PRG(k02), party 1's d1, e1 from PRG(k12) and its f1 from the
// helper, one bit per regular triple and two per correlated pair. Calls for different OT
// streams may run concurrently; calls for one stream must come in the same order at both
// parties.
type Triples struct {
	link *Link
	mu   sync.Mutex
	gens map[int]*prg.PRG
}

// NewTriples returns the triple dealer of a data party on its link.
func NewTriples(link *Link) *Triples { return &Triples{link: link, gens: map[int]*prg.PRG{}} }

// TripleBytes is the helper's reply to one request of nReg regular triples and nCorr correlated
// pairs, in wire bytes (one frame of nReg + 2·nCorr bits), and the request's.
func TripleBytes(nReg, nCorr int) (reply, request int64) {
	return int64(transport.PackedBytes(nReg+2*nCorr, 1)) + transport.HeaderSize, 8*reqWords + transport.HeaderSize
}

func (t *Triples) gen(stream int) *prg.PRG {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.gens[stream]
	if g == nil {
		pur := uint8(purTriple)
		if t.link.party == 1 {
			pur = purTriple1
		}
		g = t.link.prg(pur, uint64(stream))
		t.gens[stream] = g
	}
	return g
}

// randBits draws words(n) words of g with the bits past n cleared.
func randBits(g *prg.PRG, n int) []uint64 {
	v := make([]uint64, bitvec.Words(n))
	g.Uint64s(v)
	bitvec.ClearTail(v, n)
	return v
}

// tripleShares draws, in order, the shares a party computes itself: d, e (and f at party 0) of
// the regular triples, then d, d2, e (and f, f2 at party 0) of the pairs.
func tripleShares(g *prg.PRG, party, nReg, nCorr int) (reg [3][]uint64, corr [5][]uint64) {
	reg[0], reg[1] = randBits(g, nReg), randBits(g, nReg)
	if party == 0 {
		reg[2] = randBits(g, nReg)
	}
	corr[0], corr[1], corr[2] = randBits(g, nCorr), randBits(g, nCorr), randBits(g, nCorr)
	if party == 0 {
		corr[3], corr[4] = randBits(g, nCorr), randBits(g, nCorr)
	}
	return
}

// DealBitTriples returns this party's shares of nReg regular triples (d, e, f with
// d∧e = f) and nCorr correlated pairs (d, d2, e, f, f2 with d∧e = f, d2∧e = f2) of OT stream
// `stream`, packed.
func (t *Triples) DealBitTriples(ctx context.Context, stream, nReg, nCorr int) (reg [3][]uint64, corr [5][]uint64, err error) {
	if nReg < 0 || nCorr < 0 || nReg+2*nCorr > maxCount {
		return reg, corr, fmt.Errorf("dealer: %d triples and %d pairs asked", nReg, nCorr)
	}
	reg, corr = tripleShares(t.gen(stream), t.link.party, nReg, nCorr)
	if t.link.party == 0 {
		return reg, corr, nil
	}
	n := nReg + 2*nCorr
	buf := make([]uint64, bitvec.Words(n))
	err = t.link.call(ctx, []uint64{opTriples, uint64(stream), uint64(nReg), uint64(nCorr)}, func(src frameReader) error {
		return recvBits(ctx, src, buf, n)
	})
	if err != nil {
		return reg, corr, err
	}
	reg[2] = make([]uint64, bitvec.Words(nReg))
	corr[3], corr[4] = make([]uint64, bitvec.Words(nCorr)), make([]uint64, bitvec.Words(nCorr))
	bitvec.Extract(reg[2], buf, 0, nReg)
	bitvec.Extract(corr[3], buf, nReg, nCorr)
	bitvec.Extract(corr[4], buf, nReg+nCorr, nCorr)
	return reg, corr, nil
}

// dealTriples is the helper's side: party 1's f shares for a request, packed as DealBitTriples
// reads them.
func dealTriples(g0, g1 *prg.PRG, nReg, nCorr int) []uint64 {
	r0, c0 := tripleShares(g0, 0, nReg, nCorr)
	r1, c1 := tripleShares(g1, 1, nReg, nCorr)
	var a bitvec.Appender
	a.Reset(make([]uint64, 0, bitvec.Words(nReg+2*nCorr)+1))
	f := make([]uint64, bitvec.Words(nReg))
	for i := range f {
		f[i] = (r0[0][i]^r1[0][i])&(r0[1][i]^r1[1][i]) ^ r0[2][i]
	}
	a.Append(f, nReg)
	f = make([]uint64, bitvec.Words(nCorr))
	f2 := make([]uint64, bitvec.Words(nCorr))
	for i := range f {
		e := c0[2][i] ^ c1[2][i]
		f[i] = (c0[0][i]^c1[0][i])&e ^ c0[3][i]
		f2[i] = (c0[1][i]^c1[1][i])&e ^ c0[4][i]
	}
	a.Append(f, nCorr)
	a.Append(f2, nCorr)
	return a.Words()
}
