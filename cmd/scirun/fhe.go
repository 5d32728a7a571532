package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
	fhevm "github.com/cryptflow-go/cryptflow/vm/fhe"
)

// fheBackend returns the constructor of the fhe mode's backend (vm/fhe) for program f. The
// client packs the inferences of its batch (*batch, set once the inputs are read) into the
// ciphertexts' lanes. After every round trip each party prints its account (keys, bytes up and
// down, client encryption and decryption time, the server's time per layer) on stderr.
func fheBackend(f *sciir.File, e *env, batch *[][]ring.Tensor) serve.BackendFunc {
	var mu sync.Mutex // --local runs both parties in one process
	return func(ctx context.Context, conn *transport.Conn, _ []*transport.Conn, party int, r ring.Ring) (vm.Backend, error) {
		var b [][]ring.Tensor
		if party == 1 {
			b = *batch
		}
		fp := &fheParty{}
		be, err := fhevm.NewBackend(ctx, conn, party, r, f.Program, b, func(party int, s *fhevm.Stats) {
			fp.keep(s)
			mu.Lock()
			defer mu.Unlock()
			printFHEStats(e, party, s)
		})
		if err != nil {
			return nil, err
		}
		fp.Backend = be
		return fp, nil
	}
}

// fheParty is the fhe backend with the account of its last round trip, for the session
// report (serve.FHEAccounter).
type fheParty struct {
	*fhevm.Backend
	mu   sync.Mutex
	last fhevm.Stats
	seen bool
}

func (b *fheParty) keep(s *fhevm.Stats) {
	b.mu.Lock()
	b.last = *s
	b.last.Layers = slices.Clone(s.Layers)
	b.last.Rotations = slices.Clone(s.Rotations)
	b.seen = true
	b.mu.Unlock()
}

// FHEAccount is the session's account so far (nil before the first round trip).
func (b *fheParty) FHEAccount() *serve.FHEAccount {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.seen {
		return nil
	}
	s := &b.last
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	ops := func(o fhevm.Ops) serve.FHEOps {
		return serve.FHEOps{Rotations: o.Rotations, PlainMuls: o.PlainMuls, CtMuls: o.CtMuls, Rescales: o.Rescales}
	}
	a := &serve.FHEAccount{Params: s.Params, Period: s.Period, Lanes: s.Lanes, Group: s.Group,
		RoundTrips: s.RoundTrips, Rotations: s.Rotations, KeyBytes: s.KeyBytes, UploadBytes: s.UploadBytes,
		DownloadBytes: s.DownloadBytes, KeygenMS: ms(s.KeygenTime), EncryptMS: ms(s.EncryptTime),
		DecryptMS: ms(s.DecryptTime), EvalMS: ms(s.EvalTime), Ops: ops(s.Ops)}
	for _, l := range s.Layers {
		a.Layers = append(a.Layers, serve.FHELayer{Op: l.Op.String(), Source: l.Source, MS: ms(l.Time), Ops: ops(l.Ops)})
	}
	return a
}

func printFHEStats(e *env, party int, s *fhevm.Stats) {
	mb := func(n int64) string { return fmt.Sprintf("%.2f MB", float64(n)/1e6) }
	msf := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1e3) }
	w := e.stderr
	if party == 1 {
		fmt.Fprintf(w, "fhe client: %s, %d elements per lane, %d lanes per ciphertext, rotations %v\n", s.Params, s.Period, s.Lanes, s.Rotations)
		fmt.Fprintf(w, "fhe client: keys %s uploaded once per session (keygen %s); round trip %d (up to %d inferences each): inputs %s up (encrypt %s), results %s down (decrypt %s) so far\n",
			mb(s.KeyBytes), msf(s.KeygenTime), s.RoundTrips, s.Group, mb(s.UploadBytes), msf(s.EncryptTime), mb(s.DownloadBytes), msf(s.DecryptTime))
		return
	}
	fmt.Fprintf(w, "fhe server: round trip %d evaluated (%d rotations, %d plaintext products of which %d encoded, the others cached, %d ciphertext products, %d rescalings); so far %s of evaluation; keys %s, inputs %s, results %s; encoded diagonals kept %s\n",
		s.RoundTrips, s.Ops.Rotations, s.Ops.PlainMuls, s.Ops.Encodes, s.Ops.CtMuls, s.Ops.Rescales, msf(s.EvalTime), mb(s.KeyBytes), mb(s.UploadBytes), mb(s.DownloadBytes), mb(s.PlainCacheBytes))
	for _, l := range s.Layers {
		if l.Time >= time.Millisecond || l.Ops != (fhevm.Ops{}) {
			fmt.Fprintf(w, "fhe server:   %-10s %-28s %10s  %4d rotations, %5d plaintext products (%5d encoded), %d ciphertext products\n",
				l.Op, l.Source, msf(l.Time), l.Ops.Rotations, l.Ops.PlainMuls, l.Ops.Encodes, l.Ops.CtMuls)
		}
	}
}
