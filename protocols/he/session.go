package he

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"sync"

	lring "github.com/tuneinsight/lattigo/v6/ring"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
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
	p       *Params
	cd      *codec
	party   int
	conn    *transport.Conn
	workers int
	err     error

	k      *keys      // party 1
	p0, p1 lring.Poly // party 0: the public key (NTT, normal form)

	plans      map[string]*plan
	cacheBytes int
	cacheUsed  int
	wcache     map[wkey]*wentry
	hseed      maphash.Seed
}

// wkey names a cached layer's weights by content: its plan, the number of weights and their keyed
// 64-bit hash (callers may pass every layer's weights in one reused buffer).
type wkey struct {
	plan string
	sum  uint64
	n    int
}

type wentry struct {
	polys []lring.Poly
}

const (
	helloMagic   = "CFHE"
	helloVersion = 1
	helloSize    = 16
)

// HelloBytes is the traffic of New, both directions, frame headers included: two hellos and
// party 1's public key.
func HelloBytes(l int) (int64, error) {
	p, err := paramsFor(l)
	if err != nil {
		return 0, err
	}
	return 2*(4+helloSize) + 4 + int64(p.KeyBytes()), nil
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
	p, err := paramsFor(r.Bits)
	if err != nil {
		return nil, fmt.Errorf("he: New: %w", err)
	}
	s := &Session{r: r, p: p, cd: newCodec(p), party: party, conn: conn, workers: opt.Workers,
		plans: map[string]*plan{}, cacheBytes: opt.CacheBytes, wcache: map[wkey]*wentry{}, hseed: maphash.MakeSeed()}
	if s.workers <= 0 {
		s.workers = runtime.GOMAXPROCS(0)
	}
	if s.cacheBytes == 0 {
		s.cacheBytes = DefaultCacheBytes
	}
	var msg [helloSize]byte
	copy(msg[:4], helloMagic)
	msg[4], msg[5], msg[6], msg[7] = helloVersion, byte(party), byte(r.Bits), byte(p.LogN)
	binary.LittleEndian.PutUint64(msg[8:], p.Q[len(p.Q)-1]^p.Q[0])
	if err := conn.Send(ctx, msg[:]); err != nil {
		return nil, fmt.Errorf("he: New: hello: %w", err)
	}
	var peer [helloSize]byte
	if err := conn.Recv(ctx, peer[:]); err != nil {
		return nil, fmt.Errorf("he: New: hello: %w", err)
	}
	switch {
	case string(peer[:4]) != helloMagic || peer[4] != helloVersion:
		return nil, errors.New("he: New: the peer is not an HE session of this version")
	case int(peer[5]) == party:
		return nil, fmt.Errorf("he: New: both parties are party %d", party)
	case peer[6] != msg[6] || peer[7] != msg[7] || binary.LittleEndian.Uint64(peer[8:]) != binary.LittleEndian.Uint64(msg[8:]):
		return nil, fmt.Errorf("he: New: the peer uses Z_2^%d with other parameters", peer[6])
	}
	if party == 1 {
		s.k = genKeys(p)
		en, err := newEncryptor(p, s.cd, s.k)
		if err != nil {
			return nil, fmt.Errorf("he: New: %w", err)
		}
		seed, err := prg.RandomSeed()
		if err != nil {
			return nil, fmt.Errorf("he: New: %w", err)
		}
		c0 := p.rq.NewPoly()
		en.encrypt(c0, seed, nil, nil) // p0 = −a·s + e, a from the seed
		if err := conn.Send(ctx, s.marshalUpload(nil, seed, c0)); err != nil {
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
		s.p0, s.p1 = p.rq.NewPoly(), p.rq.NewPoly()
		if err := s.unmarshalUpload(buf, s.p0, s.p1); err != nil {
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
func (s *Session) Params() *Params { return s.p.clone() }

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

// marshalUpload appends seed and c0 (every residue at its prime's width) to dst.
func (s *Session) marshalUpload(dst []byte, seed prg.Seed, c0 lring.Poly) []byte {
	w := bitWriter{buf: append(dst, seed[:]...)}
	for i, b := range s.p.qBits {
		for _, v := range c0.Coeffs[i] {
			w.put(v, b)
		}
	}
	return w.bytes()
}

// unmarshalUpload reads an upload into c0 and expands c1 from its seed.
func (s *Session) unmarshalUpload(buf []byte, c0, c1 lring.Poly) error {
	if len(buf) != s.p.UploadBytes() {
		return fmt.Errorf("ciphertext of %d bytes, want %d", len(buf), s.p.UploadBytes())
	}
	var seed prg.Seed
	copy(seed[:], buf)
	r := bitReader{buf: buf[prg.SeedSize:]}
	for i, b := range s.p.qBits {
		q := s.p.Q[i]
		for j := range c0.Coeffs[i] {
			v := r.get(b)
			if v >= q {
				return errors.New("ciphertext coefficient out of range")
			}
			c0.Coeffs[i][j] = v
		}
	}
	lring.NewUniformSampler(prg.New(seed), s.p.rq).Read(c1)
	return nil
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

// Cost describes one call of MatMul or Conv2D: its exact traffic and the ciphertext work.
type Cost struct {
	Bytes    int64 // both directions, 4-byte frame headers included
	Uploads  int   // ciphertexts party 1 encrypts and sends
	Replies  int   // ciphertexts party 0 finishes (re-randomise, flood, switch) and party 1 decrypts
	Products int   // ciphertext × plaintext products at party 0
	Weights  int   // weight polynomials party 0 transforms (once per call unless cached)
}

// ConvCost is the cost of Conv2D for geometry g over Z_{2^l}.
func ConvCost(g ring.ConvGeom, l int) (Cost, error) {
	p, err := paramsFor(l)
	if err != nil {
		return Cost{}, err
	}
	if err := g.Validate(); err != nil {
		return Cost{}, fmt.Errorf("he: %w", err)
	}
	L := newLayout(g)
	d, bytes, err := chooseConv(p, L)
	if err != nil {
		return Cost{}, err
	}
	c := Cost{Bytes: bytes, Uploads: g.N * d.nCB * d.nBH * d.nBW}
	for m0 := 0; m0 < g.M; m0 += d.k {
		m1 := min(g.M, m0+d.k)
		cbLo, cbHi := m0/L.mg*L.cg/d.cw, ((m1-1)/L.mg*L.cg+L.cg-1)/d.cw
		c.Weights += cbHi - cbLo + 1
	}
	c.Replies = g.N * d.nBH * d.nBW * ((g.M + d.k - 1) / d.k)
	c.Products = g.N * d.nBH * d.nBW * c.Weights
	return c, nil
}

// MatMulCost is the cost of MatMul for W m×k and X k×n over Z_{2^l}.
func MatMulCost(m, k, n, l int) (Cost, error) {
	if m < 1 || k < 1 || n < 1 {
		return Cost{}, fmt.Errorf("he: MatMulCost: dimensions %d, %d, %d must be positive", m, k, n)
	}
	return ConvCost(matMulGeom(m, k, n), l)
}

// MatMulBytes is the exact traffic of MatMul for W m×k and X k×n over Z_{2^l}, both directions,
// 4-byte frame headers included: one upload per input ciphertext and one reply per output
// ciphertext (see docs/he.md).
func MatMulBytes(m, k, n, l int) (int64, error) {
	c, err := MatMulCost(m, k, n, l)
	return c.Bytes, err
}

// ConvBytes is the exact traffic of Conv2D for geometry g over Z_{2^l}, both directions, frame
// headers included.
func ConvBytes(g ring.ConvGeom, l int) (int64, error) {
	c, err := ConvCost(g, l)
	return c.Bytes, err
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
	g := matMulGeom(m, k, n)
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

// conv runs the convolution g (a matrix product is one too, matMulGeom) on its plan, made once
// per geometry and kept.
func (s *Session) conv(ctx context.Context, op string, g ring.ConvGeom, dst, w, x []uint64) error {
	key := fmt.Sprintf("conv:%+v", g)
	pl, ok := s.plans[key]
	if !ok {
		var err error
		if pl, err = convPlan(s.p, g); err != nil {
			return err
		}
		s.plans[key] = pl
	}
	return s.run(ctx, op, key, pl, dst, w, x)
}

func (s *Session) run(ctx context.Context, op, key string, pl *plan, dst, w, x []uint64) error {
	var err error
	if s.party == 1 {
		err = s.runClient(ctx, pl, dst, x)
	} else {
		err = s.runServer(ctx, key, pl, dst, w, x)
	}
	if err != nil {
		return s.fail(ctx, op, err)
	}
	return nil
}

// runClient is party 1: encrypt the share's blocks, send them, decrypt the replies.
func (s *Session) runClient(ctx context.Context, pl *plan, dst, x []uint64) error {
	p := s.p
	ups := make([][]byte, pl.nIn)
	encs := make([]*encryptor, min(s.workers, max(pl.nIn, 1)))
	for i := range encs {
		var err error
		if encs[i], err = newEncryptor(p, s.cd, s.k); err != nil {
			return err
		}
	}
	bufs := make([][]uint64, len(encs))
	polys := make([]lring.Poly, len(encs))
	err := s.parallel(ctx, pl.nIn, func(wk, i int) error {
		if polys[wk].Coeffs == nil {
			polys[wk] = p.rq.NewPoly()
		}
		lo, hi := pl.inStart[i], pl.inStart[i+1]
		if cap(bufs[wk]) < int(hi-lo) {
			bufs[wk] = make([]uint64, hi-lo)
		}
		m := bufs[wk][:hi-lo]
		for j, src := range pl.inSrc[lo:hi] {
			m[j] = x[src] & s.r.Mask()
		}
		seed := encs[wk].rnd.Seed()
		encs[wk].encrypt(polys[wk], seed, m, pl.inCoef[lo:hi])
		ups[i] = s.marshalUpload(make([]byte, 0, p.UploadBytes()), seed, polys[wk])
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
	replies := make([][]byte, len(pl.outs))
	for o := range pl.outs {
		replies[o] = make([]byte, p.ReplyBytes(len(pl.outs[o].need)))
		if err := s.conn.Recv(ctx, replies[o]); err != nil {
			return err
		}
	}
	clear(dst)
	decs := make([]*decryptor, min(s.workers, len(pl.outs)))
	return s.parallel(ctx, len(pl.outs), func(wk, o int) error {
		if decs[wk] == nil {
			decs[wk] = s.newDecryptor()
		}
		out := &pl.outs[o]
		return s.decryptReply(decs[wk], replies[o], out.need, func(i int, res, _, _ uint64) { dst[out.dst[i]] = res })
	})
}

// decryptor is party 1's per-goroutine decryption scratch.
type decryptor struct {
	c1, cs lring.Poly
	wd     wideDecoder
}

func (s *Session) newDecryptor() *decryptor {
	d := &decryptor{c1: s.p.rr.NewPoly(), cs: s.p.rr.NewPoly()}
	d.wd = wideDecoder{c: s.cd.wide, l: uint(s.p.L)}
	return d
}

// decryptReply decrypts a reply with the given needed coefficients and calls emit(i, res, hi, lo)
// with needed coefficient i's result res = round(t·v/Qr) mod t and its phase v = c0 + c1·s mod Qr
// = hi·2^64 + lo.
func (s *Session) decryptReply(d *decryptor, reply []byte, need []int32, emit func(i int, res, hi, lo uint64)) error {
	p := s.p
	if len(reply) != p.ReplyBytes(len(need)) {
		return fmt.Errorf("reply of %d bytes, want %d", len(reply), p.ReplyBytes(len(need)))
	}
	r := bitReader{buf: reply}
	if p.R == 2 {
		s.decryptWide(d, &r, need, emit)
	} else {
		q0 := p.Q[0]
		c1 := d.c1.Coeffs[0]
		for j := range c1 {
			v := r.get(p.w1) << p.Drop1
			if v >= q0 {
				v -= q0
			}
			c1[j] = v
		}
		p.rr.NTT(d.c1, d.c1)
		p.rr.MulCoeffsMontgomery(d.c1, s.k.sk.Value.Q, d.cs)
		p.rr.INTT(d.cs, d.cs)
		cs := d.cs.Coeffs[0]
		for i, pos := range need {
			v := r.get(p.w0) << p.Drop0
			if v >= q0 {
				v -= q0
			}
			v += cs[pos]
			if v >= q0 {
				v -= q0
			}
			emit(i, s.cd.decode(v), 0, v)
		}
	}
	if r.over {
		return errors.New("short reply")
	}
	return nil
}

// decryptWide is decryptReply's body for a reply modulus of two primes.
func (s *Session) decryptWide(d *decryptor, r *bitReader, need []int32, emit func(i int, res, hi, lo uint64)) {
	p := s.p
	q0, q1 := p.Q[0], p.Q[1]
	get := func(w, drop int) (uint64, uint64) {
		lo := r.get(min(w, 64))
		var hi uint64
		if w > 64 {
			hi = r.get(w - 64)
		}
		hi, lo = shl128(hi, lo, uint(drop))
		return mod128(hi, lo, q0), mod128(hi, lo, q1)
	}
	for j := range d.c1.Coeffs[0] {
		d.c1.Coeffs[0][j], d.c1.Coeffs[1][j] = get(p.w1, p.Drop1)
	}
	p.rr.NTT(d.c1, d.c1)
	p.rr.MulCoeffsMontgomery(d.c1, s.k.sk.Value.Q, d.cs)
	p.rr.INTT(d.cs, d.cs)
	for i, pos := range need {
		v0, v1 := get(p.w0, p.Drop0)
		v0 = (v0 + d.cs.Coeffs[0][pos]) % q0
		v1 = (v1 + d.cs.Coeffs[1][pos]) % q1
		hi, lo := s.cd.wide.compose(v0, v1)
		emit(i, d.wd.decode(hi, lo), hi, lo)
	}
}

// weights returns party 0's weight polynomials in NTT and Montgomery form, cached when they fit
// the budget (nil polys otherwise: the caller builds them on the fly with buildWeight).
func (s *Session) weights(ctx context.Context, key string, pl *plan, w []uint64) ([]lring.Poly, error) {
	if s.cacheBytes < 0 || len(w) == 0 {
		return nil, nil
	}
	var h maphash.Hash
	h.SetSeed(s.hseed)
	_, _ = h.Write(bitvec.Bytes(w))
	sum := h.Sum64()
	k := wkey{plan: key, sum: sum, n: len(w)}
	if e, ok := s.wcache[k]; ok {
		return e.polys, nil
	}
	size := pl.nW * len(s.p.Q) * s.p.N() * 8
	if s.cacheUsed+size > s.cacheBytes {
		return nil, nil
	}
	polys := make([]lring.Poly, pl.nW)
	err := s.parallel(ctx, pl.nW, func(_, i int) error {
		polys[i] = s.p.rq.NewPoly()
		s.buildWeight(pl, w, i, polys[i])
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.wcache[k] = &wentry{polys: polys}
	s.cacheUsed += size
	return polys, nil
}

// buildWeight sets dst to weight polynomial i in NTT and Montgomery form.
func (s *Session) buildWeight(pl *plan, w []uint64, i int, dst lring.Poly) {
	dst.Zero()
	for j := pl.wStart[i]; j < pl.wStart[i+1]; j++ {
		s.cd.setCentered(dst, int(pl.wCoef[j]), w[pl.wElem[j]])
		// Montgomery form on the non-zero coefficients only: the NTT is linear.
		for k, q := range s.p.Q {
			c := dst.Coeffs[k][pl.wCoef[j]]
			dst.Coeffs[k][pl.wCoef[j]] = lring.MForm(c, q, s.cd.brc[k])
		}
	}
	s.p.rq.NTT(dst, dst)
}

// evaluator is party 0's per-goroutine state for finishing replies.
type evaluator struct {
	rnd        *prg.PRG
	ts, gs     lring.Sampler
	u, e, buf  lring.Poly
	acc0, acc1 []lring.Poly
	wp         lring.Poly
	words      []uint64
}

const accChunk = 8

func (s *Session) newEvaluator() (*evaluator, error) {
	p := s.p
	rnd, err := prg.NewRandom()
	if err != nil {
		return nil, err
	}
	ts, err := lring.NewSampler(rnd, p.rq, lring.Ternary{P: 2.0 / 3}, false)
	if err != nil {
		return nil, err
	}
	gs, err := lring.NewSampler(rnd, p.rq, lringDefaultXe(), false)
	if err != nil {
		return nil, err
	}
	ev := &evaluator{rnd: rnd, ts: ts, gs: gs, u: p.rq.NewPoly(), e: p.rq.NewPoly(), buf: p.rq.NewPoly(),
		wp: p.rq.NewPoly(), words: make([]uint64, s.cd.fWords*p.N())}
	for i := 0; i < accChunk; i++ {
		ev.acc0 = append(ev.acc0, p.rq.NewPoly())
		ev.acc1 = append(ev.acc1, p.rq.NewPoly())
	}
	return ev, nil
}

// runServer is party 0: receive the encrypted blocks, add its own share in plaintext, multiply
// by the weights, mask, re-randomise, flood, switch to q0 and reply.
func (s *Session) runServer(ctx context.Context, key string, pl *plan, dst, w, x []uint64) error {
	p := s.p
	in := make([]ct, pl.nIn)
	raw := make([][]byte, pl.nIn)
	for i := range raw {
		raw[i] = make([]byte, p.UploadBytes())
		if err := s.conn.Recv(ctx, raw[i]); err != nil {
			return err
		}
	}
	wpolys, err := s.weights(ctx, key, pl, w)
	if err != nil {
		return err
	}
	err = s.parallel(ctx, pl.nIn, func(_, i int) error {
		c := ct{p.rq.NewPoly(), p.rq.NewPoly()}
		if err := s.unmarshalUpload(raw[i], c.c0, c.c1); err != nil {
			return fmt.Errorf("input ciphertext %d: %w", i, err)
		}
		raw[i] = nil
		// Add round(Q·x0/t) at the block's coefficients.
		pt := p.rq.NewPoly()
		for j := pl.inStart[i]; j < pl.inStart[i+1]; j++ {
			s.cd.encodeAdd(pt, int(pl.inCoef[j]), x[pl.inSrc[j]]&s.r.Mask())
		}
		p.rq.NTT(pt, pt)
		p.rq.Add(c.c0, pt, c.c0)
		in[i] = c
		return nil
	})
	if err != nil {
		return err
	}
	clear(dst)
	replies := make([][]byte, len(pl.outs))
	evs := make([]*evaluator, s.workers)
	// Work items: chunks of at most accChunk outputs of one group.
	type item struct{ g, lo, hi int }
	var items []item
	for g, grp := range pl.groups {
		for lo := 0; lo < len(grp.outs); lo += accChunk {
			items = append(items, item{g, lo, min(lo+accChunk, len(grp.outs))})
		}
	}
	err = s.parallel(ctx, len(items), func(wk, it int) error {
		if evs[wk] == nil {
			var err error
			if evs[wk], err = s.newEvaluator(); err != nil {
				return err
			}
		}
		ev := evs[wk]
		grp := &pl.groups[items[it].g]
		outs := grp.outs[items[it].lo:items[it].hi]
		for a := range outs {
			ev.acc0[a].Zero()
			ev.acc1[a].Zero()
		}
		for t, wi := range grp.ws {
			wp := ev.wp
			if wpolys != nil {
				wp = wpolys[wi]
			} else {
				s.buildWeight(pl, w, int(wi), wp)
			}
			for a, o := range outs {
				c := &in[pl.outs[o].in[t]]
				p.rq.MulCoeffsMontgomeryThenAdd(c.c0, wp, ev.acc0[a])
				p.rq.MulCoeffsMontgomeryThenAdd(c.c1, wp, ev.acc1[a])
			}
		}
		for a, o := range outs {
			replies[o] = s.finish(ev, ev.acc0[a], ev.acc1[a], &pl.outs[o], dst)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range replies {
		if err := s.conn.Send(ctx, r); err != nil {
			return err
		}
	}
	return s.conn.Flush(ctx)
}

// finish turns the product (c0, c1) into a reply: subtract the mask r at the needed
// coefficients (party 0's share is r), add an encryption of zero under the public key, flood c0,
// switch to q0, drop the low bits and the unneeded coefficients of c0.
func (s *Session) finish(ev *evaluator, c0, c1 lring.Poly, out *output, dst []uint64) []byte {
	p := s.p
	rq := p.rq
	// Re-randomisation: + (u·p0 + e0, u·p1 + e1).
	ev.ts.Read(ev.u)
	rq.NTT(ev.u, ev.u)
	rq.MForm(ev.u, ev.u)
	rq.MulCoeffsMontgomeryThenAdd(ev.u, s.p0, c0)
	rq.MulCoeffsMontgomeryThenAdd(ev.u, s.p1, c1)
	ev.gs.Read(ev.e)
	rq.NTT(ev.e, ev.e)
	rq.Add(c1, ev.e, c1)
	// e0 + Δ·(−r) + flood, in the coefficient domain.
	ev.gs.Read(ev.e)
	mask := s.r.Mask()
	ev.rnd.Uint64s(ev.words[:len(out.need)])
	for i, pos := range out.need {
		r := ev.words[i] & mask
		dst[out.dst[i]] = r
		s.cd.encodeAdd(ev.e, int(pos), (-r)&mask)
	}
	ev.rnd.Uint64s(ev.words)
	fw := s.cd.fWords
	for j := 0; j < p.N(); j++ {
		s.cd.addFlood(ev.e, j, ev.words[fw*j:fw*j+fw])
	}
	rq.NTT(ev.e, ev.e)
	rq.Add(c0, ev.e, c0)
	// Modulus switching to the reply modulus.
	for lvl := len(p.Q) - 1; lvl >= p.R; lvl-- {
		r := rq.AtLevel(lvl)
		r.DivRoundByLastModulusNTT(c0, ev.buf, c0)
		r.DivRoundByLastModulusNTT(c1, ev.buf, c1)
	}
	p.rr.INTT(c0, c0)
	p.rr.INTT(c1, c1)
	bw := bitWriter{buf: make([]byte, 0, p.ReplyBytes(len(out.need)))}
	if p.R == 1 {
		for _, v := range c1.Coeffs[0] {
			bw.put(roundShift(v, p.Drop1), p.w1)
		}
		for _, pos := range out.need {
			bw.put(roundShift(c0.Coeffs[0][pos], p.Drop0), p.w0)
		}
		return bw.bytes()
	}
	put := func(v0, v1 uint64, d, w int) {
		hi, lo := s.cd.wide.compose(v0, v1)
		hi, lo = roundShift128(hi, lo, d)
		bw.put(lo, min(w, 64))
		if w > 64 {
			bw.put(hi, w-64)
		}
	}
	for j, v := range c1.Coeffs[0] {
		put(v, c1.Coeffs[1][j], p.Drop1, p.w1)
	}
	for _, pos := range out.need {
		put(c0.Coeffs[0][pos], c0.Coeffs[1][pos], p.Drop0, p.w0)
	}
	return bw.bytes()
}
