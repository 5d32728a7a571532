package linear

import (
	"context"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// The one-batch mode (Options.OneBatch) runs all l bit positions of a chunk in one batch of
// random OTs, instance e·l+i for element e and bit i, each carrying a random pad of padWords(M, l)
// 64-bit words. Party 1's random choice bits are turned into its share's bits with one flip bit
// per OT (f = c ⊕ x_i, sent by party 1); party 0 swaps the pads of flipped OTs and sends
// corrections of l−i bits per word, bit-packed.
//
// Chunks are pipelined: party 1 sends the flips of chunk j together with the OT matrix of chunk
// j+1, and party 0 answers with the OT acknowledgement of chunk j+1 followed by the corrections of
// chunk j, so a stream with J chunks takes 2J+2 flights.

// padWords is the number of 64-bit words of random pad per OT instance: enough for m values of l
// bits (bit i uses the first m·(l−i) bits).
func padWords(M, l int) int { return (M*l + 63) / 64 }

// frameElems is the number of elements per correction frame: a multiple of 64 (so that every
// frame but the last of a chunk is whole words), about 2 MiB.
func frameElems(M, l int) int {
	return max(64, (1<<24)/(M*l*(l+1)/2)&^63)
}

// chunkElemsOneBatch is the number of elements per chunk in the one-batch mode: l·padWords words
// of pad per element, two chunks in flight (party 0 keeps two pads per OT).
func chunkElemsOneBatch(M, l, budget int) int {
	return chunkElems(l*padWords(M, l), budget)
}

// oneBatchBufs are the buffers of one chunk in flight.
type oneBatchBufs struct {
	m0, m1, choice []uint64
}

// oneBatchJob is what the one-batch flow needs to know about a product: the pad size of its OTs,
// party 1's share (one word per element, whose bits are the choice bits), and how the corrections
// of a range of elements are formed (party 0) and applied (party 1).
type oneBatchJob interface {
	// pad is the number of 64-bit words of random pad per OT instance at bit width l.
	pad(l int) int
	// chunk is the number of elements per chunk at bit width l with the stream's budget.
	chunk(l, budget int) int
	// shares is party 1's share, one word per element.
	shares() []uint64
	// sendCorrections is party 0's side of the elements [c0, c1) after the flips.
	sendCorrections(ctx context.Context, st *stream, b *oneBatchBufs, flips []uint64, c0, c1, pw int, acc []uint64) error
	// recvCorrections is party 1's side.
	recvCorrections(ctx context.Context, st *stream, b *oneBatchBufs, c0, c1, pw int, acc []uint64) error
}

func (p *product) pad(l int) int           { return padWords(p.M, l) }
func (p *product) chunk(l, budget int) int { return chunkElemsOneBatch(p.M, l, budget) }
func (p *product) shares() []uint64        { return p.x }

// crossOneBatch runs the elements [lo, hi) of job on this stream in the one-batch flow, adding this
// party's share of the products to acc.
func (st *stream) crossOneBatch(ctx context.Context, job oneBatchJob, lo, hi int, acc []uint64) error {
	if hi <= lo {
		return nil
	}
	pw := job.pad(st.l)
	ce := job.chunk(st.l, st.budget)
	chunk := func(j int) (int, int) { return lo + j*ce, min(lo+(j+1)*ce, hi) }
	J := (hi - lo + ce - 1) / ce
	// Start chunk 0's OTs.
	c0, c1 := chunk(0)
	if err := st.startOneBatch(ctx, &st.ob[0], c0, c1, pw); err != nil {
		return err
	}
	for j := 0; j < J; j++ {
		cur, next := &st.ob[j%2], &st.ob[(j+1)%2]
		c0, c1 := chunk(j)
		if st.party == 0 {
			flips := grow(&st.choice, bitvec.Words((c1-c0)*st.l))
			if err := st.conn.RecvBits(ctx, flips, (c1-c0)*st.l); err != nil {
				return err
			}
			if j+1 < J {
				n0, n1 := chunk(j + 1)
				if err := st.startOneBatch(ctx, next, n0, n1, pw); err != nil {
					return err
				}
			}
			if err := job.sendCorrections(ctx, st, cur, flips, c0, c1, pw, acc); err != nil {
				return err
			}
			continue
		}
		// Party 1: the flips of chunk j leave with chunk j+1's OT matrix.
		n := c1 - c0
		nw := bitvec.Words(n * st.l)
		flips := grow(&st.choice, nw)
		transport.Pack(flips, job.shares()[c0:c1], st.l) // bit e·l+i is bit i of x[e]
		for k := range flips {
			flips[k] ^= cur.choice[k]
		}
		if err := st.conn.SendBits(ctx, flips, n*st.l); err != nil {
			return err
		}
		if j+1 < J {
			n0, n1 := chunk(j + 1)
			if err := st.startOneBatch(ctx, next, n0, n1, pw); err != nil {
				return err
			}
		}
		if err := job.recvCorrections(ctx, st, cur, c0, c1, pw, acc); err != nil {
			return err
		}
	}
	return nil
}

// startOneBatch runs the random OTs of the elements [c0, c1) into b.
func (st *stream) startOneBatch(ctx context.Context, b *oneBatchBufs, c0, c1, pw int) error {
	nI := (c1 - c0) * st.l
	// One word of slack after the pads: the correction loops read a word ahead (bitvec.Peek).
	if st.party == 0 {
		return st.ot.SendROTWide(ctx, pw, 64, grow(&b.m0, nI*pw+1)[:nI*pw], grow(&b.m1, nI*pw+1)[:nI*pw])
	}
	return st.ot.RecvROTWide(ctx, pw, 64, grow(&b.choice, bitvec.Words(nI)), grow(&b.m0, nI*pw+1)[:nI*pw])
}

// sendCorrections is party 0's side of a chunk after the flips: per OT, with the pads (ρ0, ρ1)
// swapped when the flip bit is 1, it sends d = ρ0 − ρ1 + a mod 2^(l−i) for every word and keeps
// −2^i·ρ0.
func (p *product) sendCorrections(ctx context.Context, st *stream, b *oneBatchBufs, flips []uint64, c0, c1, pw int, acc []uint64) error {
	l, M := st.l, p.M
	n := c1 - c0
	G := frameElems(M, l)
	per := M * l * (l + 1) / 2
	corr := grow(&st.corr, (min(G, n)*per+63)/64)
	var bw bitvec.Writer
	var r0, r1 bitvec.Reader
	for f0 := 0; f0 < n; f0 += G {
		f1 := min(f0+G, n)
		bw.Reset(corr)
		for e := f0; e < f1; e++ {
			ge := c0 + e
			a := p.V[(ge%p.kv)*M:][:M]
			t := acc[(ge/p.kt)*M:][:M]
			for i := 0; i < l; i++ {
				inst := e*l + i
				pad0, pad1 := b.m0[inst*pw:(inst+1)*pw], b.m1[inst*pw:(inst+1)*pw]
				if bitvec.Bit(flips, inst) == 1 {
					pad0, pad1 = pad1, pad0
				}
				r0.Reset(pad0)
				r1.Reset(pad1)
				L := uint(l - i)
				mask := bitvec.Mask(int(L))
				for j, aj := range a {
					v0 := r0.Get(L)
					bw.Put((v0-r1.Get(L)+aj)&mask, L)
					t[j] -= v0 << uint(i)
				}
			}
		}
		bw.Flush()
		if err := st.conn.SendBits(ctx, corr, (f1-f0)*per); err != nil {
			return err
		}
	}
	return st.conn.Flush(ctx)
}

// recvCorrections is party 1's side: with its pad ρ_c = ρ_b after the flip, it takes
// 2^i·(ρ_b + b·d) per word.
func (p *product) recvCorrections(ctx context.Context, st *stream, b *oneBatchBufs, c0, c1, pw int, acc []uint64) error {
	l, M := st.l, p.M
	n := c1 - c0
	xs := p.x[c0:c1]
	G := frameElems(M, l)
	per := M * l * (l + 1) / 2
	corr := grow(&st.corr, (min(G, n)*per+63)/64)
	var br, pad bitvec.Reader
	for f0 := 0; f0 < n; f0 += G {
		f1 := min(f0+G, n)
		if err := st.conn.RecvBits(ctx, corr, (f1-f0)*per); err != nil {
			return err
		}
		br.Reset(corr)
		for e := f0; e < f1; e++ {
			xe := xs[e]
			t := acc[((c0+e)/p.kt)*M:][:M]
			for i := 0; i < l; i++ {
				inst := e*l + i
				pad.Reset(b.m0[inst*pw : (inst+1)*pw])
				L := uint(l - i)
				sel := -(xe >> uint(i) & 1)
				for j := range t {
					t[j] += (pad.Get(L) + br.Get(L)&sel) << uint(i)
				}
			}
		}
	}
	return nil
}
