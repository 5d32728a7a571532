package fhe

import (
	"context"
	"encoding"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
	fheproto "github.com/cryptflow-go/cryptflow/protocols/fhe"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/tuneinsight/lattigo/v6/core/rlwe"
)

// BackendName is the name of the fhe mode's backend in programs and handshakes.
const BackendName = "fhe"

// Stats is one party's account of an fhe session (cumulative over its inferences).
type Stats struct {
	Params        string
	Period        int // elements per lane
	Lanes         int // inferences one ciphertext can carry
	Rotations     []int
	Group         int           // inferences per round trip (the last one may carry fewer)
	Inferences    int           // inferences so far
	RoundTrips    int           // ciphertext round trips so far (one per group of up to Lanes inferences)
	KeyBytes      int64         // evaluation keys uploaded (once per session)
	UploadBytes   int64         // encrypted inputs
	DownloadBytes int64         // encrypted results
	KeygenTime    time.Duration // client
	EncryptTime   time.Duration // client
	DecryptTime   time.Duration // client
	EvalTime      time.Duration // server
	Layers        []LayerTime   // server, the last evaluation's
	Ops           fheproto.Stats
	// PlainCacheBytes is the server's encoded diagonals kept for the session's later round trips
	// (at most the PlainCacheBytes budget).
	PlainCacheBytes int64
}

// PlainCacheBytes is the server's budget per session for encoded diagonals (fheproto's plaintext
// cache): a diagonal encoded once is reused by the session's later round trips (and by equal
// diagonals), past the budget diagonals are encoded per use. 3 GiB holds LoLa MNIST's whole
// program many times over, and LoLa CIFAR-10's first map and about a quarter of its second (1.5
// GiB per CRT component; with 4 GiB a two-ciphertext --local run peaked at 8.7 GB RSS, above the
// 8 GB aimed at; docs/fhe.md); it is per session, so a server's memory grows with its concurrent
// fhe sessions.
const PlainCacheBytes = 3 << 30

// Backend is the fhe mode as a vm.Backend for the session machinery of internal/serve (handshake,
// timeouts, batches, reports). The client packs a group of up to Lanes consecutive inferences of
// its batch into the lanes of one ciphertext per input (LoLa/CryptoNets batching: the slots are
// shared, so the bytes and the server's work per inference are divided by the group's size): at
// the first Input of a group it encrypts and uploads the group's inputs (the evaluation keys went
// up once, when the backend was set up); at the group's first Output the server evaluates the
// whole program on the ciphertexts (Evaluate) and sends the re-randomised results back, which the
// client decrypts; the group's other inferences exchange nothing. The VM's own walk over the
// program is not used for the computation at either party: the layer methods do nothing (the
// client's tensors hold its own plaintext, the server's zeros), and the non-polynomial ones fail.
type Backend struct {
	p      *fixed.Program
	l      *Layout
	party  int
	r      ring.Ring
	conn   *transport.Conn
	client *fheproto.Client
	ev     *fheproto.Evaluator
	batch  [][]ring.Tensor    // client: every inference's inputs, when known at set-up
	group  int                // inferences per round trip (the client's choice, sent at set-up)
	k      int                // the current inference (-1 before the first)
	nIn    int                // inputs seen of the current inference
	next   int                // outputs seen of the current inference
	inputs []*fheproto.Vector // server: this group's encrypted inputs
	outs   [][][]uint64       // client: this group's decrypted results
	stats  Stats
	done   func(party int, s *Stats)
}

// NewBackend sets up party's end of an fhe session over conn for program p: the client generates
// its keys and uploads the evaluation keys and its group size; the server receives them. The
// client's batch, when given, holds the inputs of every inference the session will run, in
// order (the VM then asks for them one inference at a time): consecutive inferences share
// ciphertexts, Lanes at a time. Without it, every inference is one round trip. done, when set, is
// called with the party's statistics after every round trip.
func NewBackend(ctx context.Context, conn *transport.Conn, party int, r ring.Ring, p *fixed.Program, batch [][]ring.Tensor, done func(party int, s *Stats)) (*Backend, error) {
	return newBackend(ctx, conn, party, r, p, batch, 0, done)
}

// newBackend is NewBackend with the client's group size bounded by maxGroup (0: by the lanes
// only), so that tests can run several groups of a small batch.
func newBackend(ctx context.Context, conn *transport.Conn, party int, r ring.Ring, p *fixed.Program, batch [][]ring.Tensor, maxGroup int, done func(party int, s *Stats)) (*Backend, error) {
	l, err := NewLayout(p)
	if err != nil {
		return nil, err
	}
	if want, err := p.Ring(); err != nil || want != r {
		return nil, fmt.Errorf("fhe: the session ring %v is not the program's", r)
	}
	for _, o := range p.Outputs {
		if o.Party != 1 {
			return nil, fmt.Errorf("fhe: output %q goes to party %d; the fhe mode returns results to the client only", o.Name, o.Party)
		}
	}
	for _, in := range p.Inputs {
		if in.Party != 1 {
			return nil, fmt.Errorf("fhe: input %q belongs to party %d; the fhe mode encrypts the client's inputs only", in.Name, in.Party)
		}
	}
	b := &Backend{p: p, l: l, party: party, r: r, conn: conn, done: done, k: -1, group: 1}
	b.stats.Params, b.stats.Period, b.stats.Lanes, b.stats.Rotations = l.Params.String(), l.Period, l.Lanes, l.Rotations
	if party == 1 {
		if len(batch) > 1 {
			b.batch, b.group = batch, min(len(batch), l.Lanes)
			if maxGroup > 0 {
				b.group = min(b.group, maxGroup)
			}
		}
		b.stats.Group = b.group
		start := time.Now()
		if b.client, err = fheproto.NewClient(l.Params); err != nil {
			return nil, err
		}
		keys, err := b.client.Keys(l.Rotations)
		if err != nil {
			return nil, err
		}
		b.stats.KeygenTime = time.Since(start)
		objs := []encoding.BinaryMarshaler{keys.PK, keys.RLK}
		for _, g := range keys.GK {
			objs = append(objs, g)
		}
		n, err := sendAll(ctx, conn, objs)
		b.stats.KeyBytes = n
		if err != nil {
			return nil, fmt.Errorf("fhe: upload the evaluation keys: %w", err)
		}
		if err := conn.Send(ctx, binary.AppendUvarint(nil, uint64(b.group))); err != nil {
			return nil, fmt.Errorf("fhe: send the group size: %w", err)
		}
		return b, nil
	}
	keys := &fheproto.Keys{PK: new(rlwe.PublicKey), RLK: new(rlwe.RelinearizationKey), Rotations: slices.Clone(l.Rotations)}
	objs := []encoding.BinaryUnmarshaler{keys.PK, keys.RLK}
	for range l.Rotations {
		g := new(rlwe.GaloisKey)
		keys.GK = append(keys.GK, g)
		objs = append(objs, g)
	}
	n, err := recvAll(ctx, conn, objs)
	b.stats.KeyBytes = n
	if err != nil {
		return nil, fmt.Errorf("fhe: receive the evaluation keys: %w", err)
	}
	if err := checkKeys(l, keys); err != nil {
		return nil, err
	}
	data, err := conn.RecvFrame(ctx)
	if err != nil {
		return nil, fmt.Errorf("fhe: receive the group size: %w", err)
	}
	g, k := binary.Uvarint(data)
	if k != len(data) || g < 1 || g > uint64(l.Lanes) {
		return nil, fmt.Errorf("fhe: the client's group size (%d bytes) is not 1..%d inferences per ciphertext", len(data), l.Lanes)
	}
	b.group = int(g)
	b.stats.Group = b.group
	if b.ev, err = fheproto.NewEvaluator(l.Params, keys, l.Stride); err != nil {
		return nil, err
	}
	b.ev.SetPlainCache(PlainCacheBytes)
	return b, nil
}

// checkKeys checks that the client's keys are for this ring and these rotations.
func checkKeys(l *Layout, k *fheproto.Keys) error {
	n := 1 << uint(l.Params.LogN)
	if k.PK.Value[0].Q.N() != n {
		return fmt.Errorf("fhe: the client's public key is for N=%d, not %d", k.PK.Value[0].Q.N(), n)
	}
	for i, g := range k.GK {
		if want := l.Params.GaloisElement(l.Rotations[i]); g.GaloisElement != want {
			return fmt.Errorf("fhe: the client's Galois key %d is for element %d, want %d (rotation by %d)", i, g.GaloisElement, want, l.Rotations[i])
		}
	}
	return nil
}

// Stats returns the party's statistics so far.
func (b *Backend) Stats() *Stats { return &b.stats }

// Party is the party this backend plays.
func (b *Backend) Party() int { return b.party }

// Ring is the program's Z_n.
func (b *Backend) Ring() ring.Ring { return b.r }

// Input uploads (client) or receives (server) the encrypted inputs of a group at its first
// inference; the group's other inferences only check the input is the batch's.
func (b *Backend) Input(ctx context.Context, owner int, x ring.Tensor) error {
	if owner != 1 {
		return fmt.Errorf("fhe: an input of party %d (the fhe mode encrypts the client's inputs only)", owner)
	}
	if b.k < 0 || b.next != 0 || b.nIn == len(b.p.Inputs) {
		b.k, b.nIn, b.next = b.k+1, 0, 0 // a new inference of the batch
		b.stats.Inferences++
	}
	i := b.nIn
	b.nIn++
	lane := b.k % b.group
	if b.party == 1 && b.batch != nil {
		if b.k >= len(b.batch) || !slices.Equal(b.batch[b.k][i].Data, x.Data) {
			return fmt.Errorf("fhe: inference %d's input %d is not the one the batch gave at set-up", b.k, i)
		}
	}
	if lane != 0 {
		return nil
	}
	if i == 0 {
		b.inputs, b.outs = nil, nil
	}
	if b.party == 1 {
		if len(x.Data) != b.l.In[i] {
			return fmt.Errorf("fhe: input %d has %d values, the program wants %d", i, len(x.Data), b.l.In[i])
		}
		group := [][]uint64{x.Data}
		if b.batch != nil {
			group = nil
			for _, in := range b.batch[b.k:min(b.k+b.group, len(b.batch))] {
				if len(in[i].Data) != b.l.In[i] {
					return fmt.Errorf("fhe: input %d has %d values, the program wants %d", i, len(in[i].Data), b.l.In[i])
				}
				group = append(group, in[i].Data)
			}
		}
		lanes := make([][][]uint64, b.l.Vectors(i)) // per vector, per inference
		for _, data := range group {
			for g, v := range b.l.placeVectors(i, data) {
				lanes[g] = append(lanes[g], v)
			}
		}
		for _, ls := range lanes {
			start := time.Now()
			v, err := b.client.Encrypt(ls, b.l.inputPeriod(i), b.l.Stride)
			if err != nil {
				return err
			}
			b.stats.EncryptTime += time.Since(start)
			n, err := sendAll(ctx, b.conn, marshalers(v))
			b.stats.UploadBytes += n
			if err != nil {
				return fmt.Errorf("fhe: upload the encrypted input: %w", err)
			}
		}
		return nil
	}
	for range b.l.Vectors(i) {
		v, n, err := b.recvVector(ctx, b.l.Params.MaxLevel())
		b.stats.UploadBytes += n
		if err != nil {
			return fmt.Errorf("fhe: receive the encrypted input: %w", err)
		}
		b.inputs = append(b.inputs, v)
	}
	return nil
}

// Reveal returns output k of this inference: at the first output of a group's first inference
// the server evaluates the program and sends every result, which the client decrypts.
func (b *Backend) Reveal(ctx context.Context, to int, x ring.Tensor) (bool, error) {
	if to != 1 {
		return false, fmt.Errorf("fhe: a result for party %d (the fhe mode returns results to the client only)", to)
	}
	o := b.next
	if o >= len(b.p.Outputs) {
		return false, fmt.Errorf("fhe: more outputs than the program has")
	}
	if b.nIn != len(b.p.Inputs) {
		return false, fmt.Errorf("fhe: an output before the inference's %d inputs", len(b.p.Inputs))
	}
	lane := b.k % b.group
	if o == 0 && lane == 0 {
		if err := b.roundTrip(ctx); err != nil {
			return false, err
		}
	}
	b.next++
	if b.next == len(b.p.Outputs) && lane == 0 && b.done != nil {
		defer b.done(b.party, &b.stats)
	}
	if b.party == 0 {
		return false, nil
	}
	if lane >= len(b.outs) || len(b.outs[lane][o]) != len(x.Data) {
		return false, fmt.Errorf("fhe: no result %d for inference %d (lane %d)", o, b.k, lane)
	}
	copy(x.Data, b.outs[lane][o])
	return true, nil
}

func (b *Backend) roundTrip(ctx context.Context) error {
	b.stats.RoundTrips++
	if b.party == 0 {
		if want := b.l.vectorCount(); len(b.inputs) != want {
			return fmt.Errorf("fhe: %d encrypted input vectors received, the program's inputs take %d", len(b.inputs), want)
		}
		start := time.Now()
		before := b.ev.Stats
		outs, times, err := Evaluate(ctx, b.p, b.l, b.ev, b.inputs)
		if err != nil {
			return err
		}
		b.stats.EvalTime += time.Since(start)
		b.stats.Layers = times
		b.stats.Ops = fheproto.Stats{Rotations: b.ev.Stats.Rotations - before.Rotations, PlainMuls: b.ev.Stats.PlainMuls - before.PlainMuls,
			CtMuls: b.ev.Stats.CtMuls - before.CtMuls, Rescales: b.ev.Stats.Rescales - before.Rescales,
			Encodes: b.ev.Stats.Encodes - before.Encodes}
		b.stats.PlainCacheBytes = b.ev.PlainCacheBytes()
		for _, v := range outs {
			n, err := sendAll(ctx, b.conn, marshalers(v))
			b.stats.DownloadBytes += n
			if err != nil {
				return fmt.Errorf("fhe: send the encrypted result: %w", err)
			}
		}
		return b.conn.Flush(ctx)
	}
	if err := b.conn.Flush(ctx); err != nil {
		return err
	}
	vs := make([]*fheproto.Vector, len(b.p.Outputs))
	for i := range vs {
		v, n, err := b.recvVector(ctx, b.l.Params.OutLevel)
		b.stats.DownloadBytes += n
		if err != nil {
			return fmt.Errorf("fhe: receive the encrypted result: %w", err)
		}
		vs[i] = v
	}
	count := 1
	if b.batch != nil {
		count = min(b.group, len(b.batch)-b.k)
	}
	start := time.Now()
	outs, err := b.l.DecryptOutputs(b.client, vs, count)
	if err != nil {
		return err
	}
	b.stats.DecryptTime += time.Since(start)
	b.outs = outs
	return nil
}

// recvVector receives one ciphertext per component and checks its shape: degree 1, the
// expected level, the ring degree.
func (b *Backend) recvVector(ctx context.Context, level int) (*fheproto.Vector, int64, error) {
	v := &fheproto.Vector{}
	objs := make([]encoding.BinaryUnmarshaler, len(b.l.Params.T))
	for i := range objs {
		ct := new(rlwe.Ciphertext)
		v.Ct = append(v.Ct, ct)
		objs[i] = ct
	}
	n, err := recvAll(ctx, b.conn, objs)
	if err != nil {
		return nil, n, err
	}
	for _, ct := range v.Ct {
		if ct.Degree() != 1 || ct.Level() != level || ct.Value[0].N() != 1<<uint(b.l.Params.LogN) || !ct.IsNTT || ct.MetaData == nil {
			return nil, n, fmt.Errorf("a ciphertext of degree %d at level %d (N=%d), want degree 1 at level %d (N=2^%d) in the NTT domain",
				ct.Degree(), ct.Level(), ct.Value[0].N(), level, b.l.Params.LogN)
		}
	}
	return v, n, nil
}

func marshalers(v *fheproto.Vector) []encoding.BinaryMarshaler {
	out := make([]encoding.BinaryMarshaler, len(v.Ct))
	for i, c := range v.Ct {
		out[i] = c
	}
	return out
}

// sendAll sends each object as one frame and returns the bytes sent.
func sendAll(ctx context.Context, conn *transport.Conn, objs []encoding.BinaryMarshaler) (int64, error) {
	var n int64
	for _, o := range objs {
		data, err := o.MarshalBinary()
		if err != nil {
			return n, fmt.Errorf("encode: %w", err)
		}
		if err := conn.Send(ctx, data); err != nil {
			return n, err
		}
		n += int64(len(data))
	}
	return n, nil
}

// recvAll receives one frame per object and decodes it (a malformed frame is an error, never a
// panic) and returns the bytes received.
func recvAll(ctx context.Context, conn *transport.Conn, objs []encoding.BinaryUnmarshaler) (n int64, err error) {
	for _, o := range objs {
		data, err := conn.RecvFrame(ctx)
		if err != nil {
			return n, err
		}
		n += int64(len(data))
		if err := unmarshal(o, data); err != nil {
			return n, err
		}
	}
	return n, nil
}

func unmarshal(o encoding.BinaryUnmarshaler, data []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed object from the peer: %v", r)
		}
	}()
	if err := o.UnmarshalBinary(data); err != nil {
		return fmt.Errorf("malformed object from the peer: %w", err)
	}
	return nil
}

// The layer methods: the computation happens in Evaluate, at the first output.

// MatMul does nothing (see Backend).
func (b *Backend) MatMul(context.Context, fixed.Engine, ring.Tensor, *ring.Tensor, int, int, int, ring.Tensor) error {
	return nil
}

// MulConst does nothing (see Backend).
func (b *Backend) MulConst(context.Context, ring.Tensor, *ring.Tensor, ring.Tensor) error { return nil }

// Mul does nothing (see Backend).
func (b *Backend) Mul(context.Context, ring.Tensor, ring.Tensor, ring.Tensor) error { return nil }

var errNotPoly = fmt.Errorf("fhe: the fhe mode computes only polynomials (the compiler refuses such programs)")

// ReLU fails: not a polynomial.
func (b *Backend) ReLU(context.Context, ring.Tensor, ring.Tensor) error { return errNotPoly }

// Trunc fails: not a polynomial.
func (b *Backend) Trunc(context.Context, ring.Tensor, ring.Tensor, int, bool) error {
	return errNotPoly
}

// Div fails: not a polynomial.
func (b *Backend) Div(context.Context, ring.Tensor, ring.Tensor, int) error { return errNotPoly }

// MaxRows fails: not a polynomial.
func (b *Backend) MaxRows(context.Context, ring.Tensor, ring.Tensor, int, int) error {
	return errNotPoly
}

// ArgMaxRows fails: not a polynomial.
func (b *Backend) ArgMaxRows(context.Context, ring.Tensor, ring.Tensor, int, int) error {
	return errNotPoly
}

var _ vm.Backend = (*Backend)(nil)
