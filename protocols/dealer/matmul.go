package dealer

import (
	"context"
	"errors"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
)

// matDims are the public dimensions of a batch of products of two shared matrices:
// batch products of an m×k by a k×n matrix.
type matDims struct{ batch, m, k, n int }

func (d matDims) validate() error {
	if d.batch < 0 || d.m < 0 || d.k < 0 || d.n < 0 || d.batch > maxCount || d.m > maxCount || d.k > maxCount || d.n > maxCount {
		return fmt.Errorf("dealer: matrix product %d × (%d×%d times %d×%d)", d.batch, d.m, d.k, d.k, d.n)
	}
	x, y, z := d.sizes()
	if x > maxCount || y > maxCount || z > maxCount {
		return fmt.Errorf("dealer: matrix product with %d, %d, %d elements exceeds %d", x, y, z, maxCount)
	}
	return nil
}

// sizes returns the element counts of X, Y and Z (int64 products checked against maxCount).
func (d matDims) sizes() (x, y, z int64) {
	b := int64(d.batch)
	return b * int64(d.m) * int64(d.k), b * int64(d.k) * int64(d.n), b * int64(d.m) * int64(d.n)
}

// matShares returns party p's shares of the matrix triple of a call, from its PRG stream: A_p
// (batch·m·k), B_p (batch·k·n) and, at party 0, C_0 (batch·m·n), reduced into r.
func matShares(seed prg.Seed, party int, r ring.Ring, d matDims, call uint64) (a, b, c []uint64) {
	nx, ny, nz := d.sizes()
	pur := uint8(purMat0)
	if party == 1 {
		pur = purMat1
	}
	g := prg.NewStream(seed, streamID(pur, call))
	a, b = make([]uint64, nx), make([]uint64, ny)
	g.Uint64s(a)
	g.Uint64s(b)
	r.ReduceVec(a)
	r.ReduceVec(b)
	if party == 0 {
		c = make([]uint64, nz)
		g.Uint64s(c)
		r.ReduceVec(c)
	}
	return a, b, c
}

// batchMatMul sets dst[i] = x[i]·y[i] for every product of d, in r.
func batchMatMul(r ring.Ring, dst, x, y []uint64, d matDims) {
	mk, kn, mn := d.m*d.k, d.k*d.n, d.m*d.n
	for i := 0; i < d.batch; i++ {
		r.MatMul(dst[i*mn:][:mn], x[i*mk:][:mk], d.m, d.k, d.n, y[i*kn:][:kn])
	}
}

// dealMatMul is the helper's side of a matrix triple: C1 = (A0 + A1)·(B0 + B1) − C0.
func dealMatMul(seed0, seed1 prg.Seed, r ring.Ring, d matDims, call uint64) []uint64 {
	a0, b0, c0 := matShares(seed0, 0, r, d, call)
	a1, b1, _ := matShares(seed1, 1, r, d, call)
	r.AddVec(a0, a0, a1)
	r.AddVec(b0, b0, b1)
	_, _, nz := d.sizes()
	c1 := make([]uint64, nz)
	batchMatMul(r, c1, a0, b0, d)
	r.SubVec(c1, c1, c0)
	return c1
}

// SharedMatMul multiplies two shared matrices (batched) between a data party and the other on
// conn, with a matrix Beaver triple (A, B, C = A·B) dealt by the helper on link: A_p, B_p (and
// C_0) come from the pairwise seeds, the helper sends party 1 C_1 = A·B − C_0. Online each party
// opens E = X − A and F = Y − B (party 1 sends first, party 0 answers) and computes
//
//	Z_p = C_p + E·B_p + A_p·F  (+ E·F at party 0)
//
// which sum to X·Y. Both data parties make the same calls in the same order. A SharedMatMul is
// not safe for concurrent use.
type SharedMatMul struct {
	link  *Link
	conn  *transport.Conn
	r     ring.Ring
	party int
	calls uint64
	err   error
}

// NewSharedMatMul returns the products of two shared matrices of a data party over the ring r.
func NewSharedMatMul(link *Link, conn *transport.Conn, r ring.Ring) (*SharedMatMul, error) {
	if link == nil || conn == nil {
		return nil, errors.New("dealer: NewSharedMatMul: nil link or connection")
	}
	if !r.Valid() || r.Kind != ring.Pow2 {
		return nil, fmt.Errorf("dealer: NewSharedMatMul: ring %v", r)
	}
	return &SharedMatMul{link: link, conn: conn, r: r, party: link.party}, nil
}

// SharedMatMulBytes is the traffic of one Apply of batch products of an m×k by a k×n matrix
// over Z_{2^l}, in wire bytes: party 1 → party 0 and party 0 → party 1 (E and F each,
// batch·(m·k + k·n) values of l bits, packed), helper → party 1 (C_1, batch·m·n values) and
// party 1 → helper (the request).
func SharedMatMulBytes(batch, m, k, n, l int) (p01, p10, p21, p12 int64) {
	if batch*m*n == 0 || k == 0 {
		return 0, 0, 0, 0
	}
	open := PackedFrames(batch*(m*k+k*n), l)
	return open, open, PackedFrames(batch*m*n, l), 8*reqWords + transport.HeaderSize
}

// Apply sets dst to this party's share of the batch products X[i]·Y[i]: x holds this party's
// shares of batch row-major m×k matrices, y of batch k×n, dst batch m×n; exact in Z_{2^l}. dst
// must not alias x or y. Argument errors leave it usable; any other failure aborts the
// connection to the other data party and it refuses further calls.
func (s *SharedMatMul) Apply(ctx context.Context, dst, x, y []uint64, batch, m, k, n int) error {
	if s.err != nil {
		return fmt.Errorf("dealer: shared matmul: unusable after an earlier failure: %w", s.err)
	}
	d := matDims{batch, m, k, n}
	if err := d.validate(); err != nil {
		return err
	}
	nx, ny, nz := d.sizes()
	if int64(len(x)) != nx || int64(len(y)) != ny || int64(len(dst)) != nz {
		return fmt.Errorf("dealer: shared matmul: operands of %d and %d and a result of %d elements, want %d, %d, %d",
			len(x), len(y), len(dst), nx, ny, nz)
	}
	if nz == 0 {
		return nil
	}
	if k == 0 {
		clear(dst)
		return nil
	}
	if err := s.apply(ctx, dst, x, y, d); err != nil {
		s.err = err
		actx, cancel := context.WithTimeout(context.Background(), timeoutAbort)
		_ = s.conn.Abort(actx, "dealer: shared matmul failed at the peer: "+err.Error())
		cancel()
		return err
	}
	return nil
}

func (s *SharedMatMul) apply(ctx context.Context, dst, x, y []uint64, d matDims) error {
	call := s.calls
	s.calls++
	r, l := s.r, s.r.Bits
	a, b, c := matShares(s.link.seed, s.party, r, d, call)
	nx, ny, _ := d.sizes()
	// This party's part of the openings: E_p = X_p − A_p, F_p = Y_p − B_p, one message.
	mine := make([]uint64, nx+ny)
	r.SubVec(mine[:nx], x, a)
	r.SubVec(mine[nx:], y, b)
	theirs := make([]uint64, nx+ny)
	exchange := func() error {
		if s.party == 1 {
			if err := sendPacked(ctx, s.conn, mine, l); err != nil {
				return err
			}
			if err := s.conn.Flush(ctx); err != nil {
				return err
			}
			return recvPacked(ctx, s.conn, theirs, l)
		}
		if err := recvPacked(ctx, s.conn, theirs, l); err != nil {
			return err
		}
		if err := sendPacked(ctx, s.conn, mine, l); err != nil {
			return err
		}
		return s.conn.Flush(ctx)
	}
	if err := exchange(); err != nil {
		return err
	}
	if s.party == 1 {
		c = make([]uint64, len(dst))
		req := []uint64{opMatMul, call, uint64(l), uint64(d.batch), uint64(d.m), uint64(d.k), uint64(d.n)}
		if err := s.link.call(ctx, req, func(src frameReader) error { return recvPacked(ctx, src, c, l) }); err != nil {
			return err
		}
	}
	r.AddVec(mine, mine, theirs) // E ‖ F
	e, f := mine[:nx], mine[nx:]
	t := make([]uint64, len(dst))
	copy(dst, c)
	batchMatMul(r, t, e, b, d) // E·B_p
	r.AddVec(dst, dst, t)
	batchMatMul(r, t, a, f, d) // A_p·F
	r.AddVec(dst, dst, t)
	if s.party == 0 {
		batchMatMul(r, t, e, f, d) // E·F
		r.AddVec(dst, dst, t)
	}
	return nil
}
