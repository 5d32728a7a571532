package iknp

import (
	"context"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

func TestBlockCOT(t *testing.T) {
	s0, s1 := newPair(t, testOpt)
	ctx := context.Background()
	for _, n := range sizes {
		for dir := 0; dir < 2; dir++ {
			snd, rcv := s0, s1
			if dir == 1 {
				snd, rcv = s1, s0
			}
			b := make([]uint64, ot.BitWords(n))
			k := make([]prg.Block, n)
			m := make([]prg.Block, n)
			st := rcv.Conn().Stats()
			testenv.MustBoth(t, func() error { return snd.SendBlockCOT(ctx, k) },
				func() error { return rcv.RecvBlockCOT(ctx, b, m) })
			d := snd.Delta()
			for i := 0; i < n; i++ {
				want := k[i]
				if ot.Bit(b, i) == 1 {
					want = want.Xor(d)
				}
				if m[i] != want {
					t.Fatalf("n=%d dir=%d i=%d: M=%x want %x", n, dir, i, m[i], want)
				}
			}
			// One flight from the receiver: header + one frame of 128 columns per 8192 instances.
			want := int64(headerSize + transport.HeaderSize)
			for off := 0; off < n; off += chunkOTs {
				nc := min(chunkOTs, n-off)
				want += int64(128*8*ot.BitWords(nc)) + transport.HeaderSize
			}
			if got := rcv.Conn().Stats().Sub(st); got.BytesSent != want || got.BytesRecv != 0 {
				t.Fatalf("n=%d: receiver sent %d bytes (want %d), received %d", n, got.BytesSent, want, got.BytesRecv)
			}
		}
	}
	// Δ is the same for later batches, and hashed OTs still work afterwards.
	x, rr, y := []uint64{5, 7}, make([]uint64, 2), make([]uint64, 2)
	testenv.MustBoth(t, func() error { return s0.SendCOT(ctx, 16, x, rr) },
		func() error { return s1.RecvCOT(ctx, 16, []uint64{2}, y) })
	// The receiver's choice bits are random: some 0, some 1, none past n.
	b := make([]uint64, 2)
	k, m := make([]prg.Block, 100), make([]prg.Block, 100)
	testenv.MustBoth(t, func() error { return s0.SendBlockCOT(ctx, k) }, func() error { return s1.RecvBlockCOT(ctx, b, m) })
	if b[0] == 0 || b[0] == ^uint64(0) || b[1]>>36 != 0 {
		t.Fatalf("choice bits %x", b)
	}
	if y[0] != rr[0] || y[1] != (rr[1]+7)&0xffff {
		t.Fatalf("COT after block COTs: r=%v y=%v", rr, y)
	}
	if err := s1.RecvBlockCOT(ctx, nil, make([]prg.Block, 3)); err == nil {
		t.Fatal("short choice vector accepted")
	}
}
