package he

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
	"github.com/cryptflow-go/cryptflow/protocols/he/scheme"
)

// runClient is party 1: encrypt the share's blocks, send them, decrypt the replies.
func (s *Session) runClient(ctx context.Context, pl *heplan.Plan, dst, x []uint64) error {
	p := s.p
	ups := make([][]byte, pl.Inputs)
	encs := make([]*scheme.Encryptor, min(s.workers, max(pl.Inputs, 1)))
	for i := range encs {
		var err error
		if encs[i], err = scheme.NewEncryptor(p, s.sk); err != nil {
			return err
		}
	}
	err := s.parallel(ctx, pl.Inputs, func(wk, i int) error {
		lo, hi := pl.InStart[i], pl.InStart[i+1]
		ups[i] = encs[wk].Encrypt(make([]byte, 0, p.UploadBytes()), pl.InCoef[lo:hi], pl.InSrc[lo:hi], x)
		return nil
	})
	if err != nil {
		return err
	}
	for _, u := range ups {
		if err := s.conn.Send(ctx, u); err != nil {
			return err
		}
	}
	if err := s.conn.Flush(ctx); err != nil {
		return err
	}
	replies := make([][]byte, len(pl.Outputs))
	for o := range pl.Outputs {
		replies[o] = make([]byte, p.ReplyBytes(len(pl.Outputs[o].Need)))
		if err := s.conn.Recv(ctx, replies[o]); err != nil {
			return err
		}
	}
	clear(dst)
	decs := make([]*scheme.Decryptor, min(s.workers, len(pl.Outputs)))
	return s.parallel(ctx, len(pl.Outputs), func(wk, o int) error {
		if decs[wk] == nil {
			decs[wk] = scheme.NewDecryptor(p, s.sk)
		}
		out := &pl.Outputs[o]
		if err := decs[wk].Decrypt(replies[o], out.Need, func(i int, res, _, _ uint64) { dst[out.Dst[i]] = res }); err != nil {
			return fmt.Errorf("reply %d: %w", o, err)
		}
		return nil
	})
}
