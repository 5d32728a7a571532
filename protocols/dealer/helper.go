package dealer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
)

// timeoutAbort bounds the abort message sent after a failure.
const timeoutAbort = time.Second

// AcceptLink is the helper's end of NewLink: it reads the data party's hello (its index and its
// pairwise seed) and acknowledges it.
func AcceptLink(ctx context.Context, conn *transport.Conn) (party int, seed prg.Seed, err error) {
	msg := make([]byte, 8+8+prg.SeedSize)
	if err := conn.Recv(ctx, msg); err != nil {
		return 0, seed, fmt.Errorf("dealer: link hello: %w", err)
	}
	if getU64(msg) != helloMagic || getU64(msg[8:]) > 1 {
		return 0, seed, errors.New("dealer: link hello: not a data party's hello")
	}
	party = int(getU64(msg[8:]))
	copy(seed[:], msg[16:])
	var ack [16]byte
	putU64(ack[0:], helloMagic)
	putU64(ack[8:], uint64(party))
	if err := conn.Send(ctx, ack[:]); err != nil {
		return 0, seed, err
	}
	return party, seed, conn.Flush(ctx)
}

// Helper is party 2: it holds the pairwise seeds k02 and k12 and answers the data parties'
// requests with corrections. It never sees weights, inputs or shares.
type Helper struct {
	seeds [2]prg.Seed
}

// NewHelper returns the helper with the seeds it shares with party 0 and party 1.
func NewHelper(k02, k12 prg.Seed) *Helper { return &Helper{seeds: [2]prg.Seed{k02, k12}} }

// Serve answers the requests of data party `party` on conn until it says it is done (nil), the
// connection fails or ctx ends (the error).
func (h *Helper) Serve(ctx context.Context, conn *transport.Conn, party int) error {
	if party != 0 && party != 1 {
		return fmt.Errorf("dealer: Serve: data party %d", party)
	}
	type cotGen struct{ keys, bits *prg.PRG }
	cots := map[uint64]cotGen{}
	type tripleGen struct{ g0, g1 *prg.PRG }
	triples := map[uint64]tripleGen{}
	sender := 1 - party
	delta := deltaOf(h.seeds[sender])
	var req [reqWords]uint64
	for {
		if err := conn.RecvUint64s(ctx, req[:]); err != nil {
			return fmt.Errorf("dealer: helper: party %d: %w", party, err)
		}
		var err error
		switch req[0] {
		case opDone:
			return nil
		case opCOT:
			st, snd, n := req[1], req[2], req[3]
			if snd != uint64(sender) || n > maxCount || st > 1<<24 {
				err = fmt.Errorf("COT request: stream %d, sender %d, %d COTs", st, snd, n)
				break
			}
			g, ok := cots[st]
			if !ok {
				g = cotGen{prg.NewStream(h.seeds[sender], streamID(purKeys, st)), prg.NewStream(h.seeds[party], streamID(purBits, st))}
				cots[st] = g
			}
			m := make([]prg.Block, n)
			bits := make([]uint64, (n+63)/64)
			g.keys.Blocks(m)
			g.bits.Uint64s(bits)
			for i := range m {
				if bits[i>>6]>>(i&63)&1 == 1 {
					m[i] = m[i].Xor(delta)
				}
			}
			err = sendWords(ctx, conn, prg.BlockWords(m))
		case opDealt:
			st, snd, N, w, l, at, n := req[1], req[2], req[3], req[4], req[5], req[6], req[7]
			if snd != uint64(sender) || st > 1<<24 || N > ot.MaxN || w > maxDealtWidth || l > 64 || n > maxCount || at > 1<<56 {
				err = fmt.Errorf("dealt OT request: stream %d, sender %d, N=%d, w=%d, l=%d, instances %d+%d", st, snd, N, w, l, at, n)
				break
			}
			var m int
			if m, _, err = checkDealt("helper", int(N), int(w), int(l), int(n*w), int(w)); err != nil {
				break
			}
			k := shape{m, int(w), int(l)}
			if at > (1<<60)/uint64(8*k.words()) {
				err = fmt.Errorf("dealt OT request: instance %d is past the end of the shape's stream", at)
				break
			}
			out := dealOTs(h.seeds[sender], h.seeds[party], st, k, at, int(n))
			err = sendPacked(ctx, conn, out, int(l))
		case opTriples:
			st, nReg, nCorr := req[1], req[2], req[3]
			if party != 1 || nReg > maxCount || nCorr > maxCount || nReg+2*nCorr > maxCount || st > 1<<24 {
				err = fmt.Errorf("triple request from party %d: stream %d, %d triples, %d pairs", party, st, nReg, nCorr)
				break
			}
			g, ok := triples[st]
			if !ok {
				g = tripleGen{prg.NewStream(h.seeds[0], streamID(purTriple, st)), prg.NewStream(h.seeds[1], streamID(purTriple1, st))}
				triples[st] = g
			}
			f := dealTriples(g.g0, g.g1, int(nReg), int(nCorr))
			err = conn.SendBits(ctx, f, int(nReg+2*nCorr))
		case opLinear:
			id, call, l := req[1], req[2], req[3]
			sh := shapeOf(req[4:])
			r, rerr := ring.New(int(min(l, 65)))
			switch {
			case party != 1:
				err = fmt.Errorf("linear request from party %d", party)
			case rerr != nil:
				err = rerr
			default:
				if err = sh.Validate(); err == nil {
					err = sendPacked(ctx, conn, dealLinear(h.seeds[0], h.seeds[1], r, sh, id, call), r.Bits)
				}
			}
		case opMatMul:
			call, l, d := req[1], req[2], matDims{int(min(req[3], maxCount+1)), int(min(req[4], maxCount+1)),
				int(min(req[5], maxCount+1)), int(min(req[6], maxCount+1))}
			r, rerr := ring.New(int(min(l, 65)))
			switch {
			case party != 1:
				err = fmt.Errorf("matrix triple request from party %d", party)
			case rerr != nil:
				err = rerr
			default:
				if err = d.validate(); err == nil {
					err = sendPacked(ctx, conn, dealMatMul(h.seeds[0], h.seeds[1], r, d, call), r.Bits)
				}
			}
		default:
			err = fmt.Errorf("unknown request %d", req[0])
		}
		if err == nil {
			err = conn.Flush(ctx)
		}
		if err != nil {
			err = fmt.Errorf("dealer: helper: party %d: %w", party, err)
			actx, cancel := context.WithTimeout(context.Background(), timeoutAbort)
			_ = conn.Abort(actx, err.Error())
			cancel()
			return err
		}
	}
}

// ServeBoth serves both data parties' links concurrently until both are done. When one fails,
// the other link is aborted, so that both data parties fail at once.
func (h *Helper) ServeBoth(ctx context.Context, c0, c1 *transport.Conn) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for p, c := range []*transport.Conn{c0, c1} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[p] = h.Serve(ctx, c, p); errs[p] != nil {
				actx, acancel := context.WithTimeout(context.Background(), timeoutAbort)
				_ = []*transport.Conn{c0, c1}[1-p].Abort(actx, "the helper's link to party "+fmt.Sprint(p)+" failed: "+errs[p].Error())
				acancel()
				cancel()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
