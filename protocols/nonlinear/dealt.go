package nonlinear

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
)

// dealtReq fills a pool's triples from the stream's TripleDealer (Options.Dealer). It is routed
// by runOTN on its kind (N < 0) and sends nothing on the stream's connection; the otnReq methods
// are never called for it.
type dealtReq struct {
	st   *stream
	reg  *bitTriples
	corr *corrTriples
}

func (q *dealtReq) kind() (int, int) { return -1, 0 }
func (q *dealtReq) size() int        { return q.reg.n + q.corr.n }
func (q *dealtReq) send([]uint64)    {}
func (q *dealtReq) choose([]uint8)   {}
func (q *dealtReq) receive([]uint64) {}

func (q *dealtReq) deal(ctx context.Context) error {
	reg, corr, err := q.st.dealer.DealBitTriples(ctx, q.st.idx, q.reg.n, q.corr.n)
	if err != nil {
		return err
	}
	for i, v := range append(reg[:], corr[:]...) {
		want := bitvec.Words(q.reg.n)
		if i >= len(reg) {
			want = bitvec.Words(q.corr.n)
		}
		if len(v) < want {
			return fmt.Errorf("nonlinear: the dealer returned %d words for triple vector %d, want %d", len(v), i, want)
		}
	}
	q.reg.d, q.reg.e, q.reg.f = reg[0], reg[1], reg[2]
	q.corr.d, q.corr.d2, q.corr.e, q.corr.f, q.corr.f2 = corr[0], corr[1], corr[2], corr[3], corr[4]
	return nil
}
