package he

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"sync"

	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
	"github.com/cryptflow-go/cryptflow/protocols/he/scheme"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
)

// DefaultCacheBytes bounds the memory of party 0's cache of NTT-form weight polynomials.
const DefaultCacheBytes = 256 << 20

// Options configures a Session. The zero value selects the defaults.
type Options struct {
	// Workers is the number of goroutines for ciphertext work; 0 means GOMAXPROCS.
	Workers int
	// CacheBytes bounds party 0's cache of weight plaintexts in NTT form (a layer's weights are
	// cached when they fit); 0 means DefaultCacheBytes, negative disables the cache.
	CacheBytes int
}

// Session computes products of party 0's private weights with a matrix shared over Z_{2^l}, with
// RLWE ciphertexts under party 1's key. Both parties must call the same methods with the same
// dimensions in the same order. A Session is not safe for concurrent use; after a failure in the
// middle of a protocol it refuses further work (Err) and aborts its connection.
type Session struct {
	r       ring.Ring
	p       *scheme.Params
	party   int
	conn    *transport.Conn
	workers int
	err     error

	sk *scheme.SecretKey // party 1
	pk *scheme.PublicKey // party 0

	plans      map[ring.ConvGeom]*heplan.Plan
	cacheBytes int
	cacheUsed  int
	wcache     map[wkey][]*scheme.Plaintext
	hseed      maphash.Seed
}

// New starts a session of the given party over conn: both parties exchange a hello (ring,
// parameters), then party 1 draws its secret key and sends the public key (p0, seed of p1).
func New(ctx context.Context, r ring.Ring, party int, conn *transport.Conn, opt Options) (*Session, error) {
	if !r.Valid() {
		return nil, fmt.Errorf("he: New: invalid ring %v", r)
	}
	if party != 0 && party != 1 {
		return nil, fmt.Errorf("he: New: party %d, want 0 or 1", party)
	}
	if conn == nil {
		return nil, errors.New("he: New: nil connection")
	}
	p, err := scheme.ParamsFor(r.Bits)
	if err != nil {
		return nil, fmt.Errorf("he: New: %w", err)
	}
	s := &Session{r: r, p: p, party: party, conn: conn, workers: opt.Workers,
		plans: map[ring.ConvGeom]*heplan.Plan{}, cacheBytes: opt.CacheBytes, wcache: map[wkey][]*scheme.Plaintext{}, hseed: maphash.MakeSeed()}
	if s.workers <= 0 {
		s.workers = runtime.GOMAXPROCS(0)
	}
	if s.cacheBytes == 0 {
		s.cacheBytes = DefaultCacheBytes
	}
	if err := s.hello(ctx); err != nil {
		return nil, fmt.Errorf("he: New: hello: %w", err)
	}
	if party == 1 {
		s.sk = scheme.GenSecretKey(p)
		en, err := scheme.NewEncryptor(p, s.sk)
		if err != nil {
			return nil, fmt.Errorf("he: New: %w", err)
		}
		if err := conn.Send(ctx, en.Encrypt(make([]byte, 0, p.KeyBytes()), nil, nil, nil)); err != nil {
			return nil, fmt.Errorf("he: New: public key: %w", err)
		}
		if err := conn.Flush(ctx); err != nil {
			return nil, fmt.Errorf("he: New: public key: %w", err)
		}
	} else {
		buf := make([]byte, p.KeyBytes())
		if err := conn.Recv(ctx, buf); err != nil {
			return nil, fmt.Errorf("he: New: public key: %w", err)
		}
		if s.pk, err = p.DecodePublicKey(buf); err != nil {
			return nil, fmt.Errorf("he: New: public key: %w", err)
		}
	}
	return s, nil
}

// Ring returns the ring of the shares.
func (s *Session) Ring() ring.Ring { return s.r }

// Party returns this party's index.
func (s *Session) Party() int { return s.party }

// Params returns (a copy of) the RLWE parameters.
func (s *Session) Params() *heplan.Params { return s.p.Params.Clone() }

// Err returns the error that made the session unusable, or nil.
func (s *Session) Err() error { return s.err }

func (s *Session) fail(ctx context.Context, op string, err error) error {
	err = fmt.Errorf("he: %s: %w", op, err)
	if s.err == nil {
		s.err = err
		_ = s.conn.Abort(context.WithoutCancel(ctx), err.Error())
	}
	return err
}

// parallel runs f(worker, i) for i < n on the session's workers and returns the first error.
func (s *Session) parallel(ctx context.Context, n int, f func(w, i int) error) error {
	nw := min(s.workers, n)
	if nw <= 1 {
		for i := 0; i < n; i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := f(0, i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		mu   sync.Mutex
		next int
		ferr error
		wg   sync.WaitGroup
	)
	for w := 0; w < nw; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := ferr != nil
				mu.Unlock()
				if stop || i >= n {
					return
				}
				err := ctx.Err()
				if err == nil {
					err = f(w, i)
				}
				if err != nil {
					mu.Lock()
					if ferr == nil {
						ferr = err
					}
					mu.Unlock()
					return
				}
			}
		}(w)
	}
	wg.Wait()
	return ferr
}

// checkOperands validates the slice lengths: party 0 must pass nw weights, party 1 none.
func (s *Session) checkOperands(op string, dst, w, x []uint64, nw, nx, nd int) error {
	if err := ring.CheckProduct(s.party, dst, w, x, nw, nx, nd); err != nil {
		return fmt.Errorf("he: %s: %w", op, err)
	}
	return nil
}

// MatMul sets dst (m×n, row-major) to this party's share of W·X over Z_{2^l}, where W (m×k) is
// party 0's (nil at party 1) and X (k×n) is shared (x is this party's share). Traffic:
// MatMulBytes; one flight each way.
func (s *Session) MatMul(ctx context.Context, dst, w []uint64, m, k, n int, x []uint64) error {
	const op = "MatMul"
	if s.err != nil {
		return fmt.Errorf("he: %s: session unusable: %w", op, s.err)
	}
	if m < 0 || k < 0 || n < 0 {
		return fmt.Errorf("he: %s: negative dimension in %d×%d times %d×%d", op, m, k, k, n)
	}
	if err := s.checkOperands(op, dst, w, x, m*k, k*n, m*n); err != nil {
		return err
	}
	if m*n == 0 {
		return nil
	}
	if k == 0 {
		clear(dst)
		return nil
	}
	g := heplan.MatMulGeom(m, k, n)
	if err := g.Validate(); err != nil {
		return fmt.Errorf("he: %s: %w", op, err)
	}
	return s.conv(ctx, op, g, dst, w, x)
}

// Conv2D sets dst ([N, M, OH, OW]) to this party's share of the convolution of the shared x ([N,
// C, H, W]) with party 0's weights w ([M, C/Groups, KH, KW]; nil at party 1); see ring.ConvGeom.
// Traffic: ConvBytes; one flight each way.
func (s *Session) Conv2D(ctx context.Context, dst, w []uint64, g ring.ConvGeom, x []uint64) error {
	const op = "Conv2D"
	if s.err != nil {
		return fmt.Errorf("he: %s: session unusable: %w", op, s.err)
	}
	if err := g.Validate(); err != nil {
		return fmt.Errorf("he: %s: %w", op, err)
	}
	if err := s.checkOperands(op, dst, w, x, g.M*(g.C/g.Groups)*g.KH*g.KW, g.N*g.C*g.H*g.W, g.N*g.M*g.OH*g.OW); err != nil {
		return err
	}
	return s.conv(ctx, op, g, dst, w, x)
}

// conv runs the convolution g (a matrix product is one too, heplan.MatMulGeom) on its plan, made
// once per geometry and kept.
func (s *Session) conv(ctx context.Context, op string, g ring.ConvGeom, dst, w, x []uint64) error {
	pl, ok := s.plans[g]
	if !ok {
		var err error
		if pl, err = heplan.ConvPlan(&s.p.Params, g); err != nil {
			return fmt.Errorf("he: %s: %w", op, err)
		}
		s.plans[g] = pl
	}
	return s.run(ctx, op, pl, dst, w, x)
}

// run runs this party's side of the product on the plan pl.
func (s *Session) run(ctx context.Context, op string, pl *heplan.Plan, dst, w, x []uint64) error {
	var err error
	if s.party == 1 {
		err = s.runClient(ctx, pl, dst, x)
	} else {
		err = s.runServer(ctx, pl, dst, w, x)
	}
	if err != nil {
		return s.fail(ctx, op, err)
	}
	return nil
}

// PrepareWeights builds party 0's weight plaintexts (NTT form) of the product or convolution g
// with weights w into the session's cache now, ahead of the call that will use them (the same
// geometry and weights: MatMul's is heplan.MatMulGeom(m, k, n)), and reports whether they are
// cached (they are not when they exceed what is left of Options.CacheBytes). It sends nothing;
// party 1 has no weights and calls nothing.
func (s *Session) PrepareWeights(ctx context.Context, g ring.ConvGeom, w []uint64) (bool, error) {
	const op = "PrepareWeights"
	if s.err != nil {
		return false, fmt.Errorf("he: %s: session unusable: %w", op, s.err)
	}
	if s.party != 0 {
		return false, fmt.Errorf("he: %s: party %d holds no weights", op, s.party)
	}
	if err := g.Validate(); err != nil {
		return false, fmt.Errorf("he: %s: %w", op, err)
	}
	if want := g.M * (g.C / g.Groups) * g.KH * g.KW; len(w) != want {
		return false, fmt.Errorf("he: %s: %d weights for a %d×%d×%d×%d kernel", op, len(w), g.M, g.C/g.Groups, g.KH, g.KW)
	}
	pl, ok := s.plans[g]
	if !ok {
		var err error
		if pl, err = heplan.ConvPlan(&s.p.Params, g); err != nil {
			return false, fmt.Errorf("he: %s: %w", op, err)
		}
		s.plans[g] = pl
	}
	polys, err := s.weights(ctx, pl, w)
	if err != nil {
		return false, fmt.Errorf("he: %s: %w", op, err)
	}
	return polys != nil, nil
}

// CacheBytes returns the memory of the cached weight plaintexts and the cache's bound.
func (s *Session) CacheBytes() (used, bound int) { return s.cacheUsed, max(s.cacheBytes, 0) }
