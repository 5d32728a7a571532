package dealer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// Request opcodes (word 0 of a request).
const (
	opCOT     = 1 // n COTs on stream s in which party `sender` sends: words s, sender, n
	opTriples = 2 // bit triples on stream s: words s, nReg, nCorr
	opLinear  = 3 // a linear layer's correction: words kind, id, call, l, then the shape
	opDone    = 4 // the data party is done (the helper's loop for this link returns)
	opDealt   = 5 // dealt random 1-of-N OTs on stream s: words s, sender, N, w, l, first instance, n
	opMatMul  = 6 // a matrix triple's C1 for a product of two shared matrices: words call, l, batch, m, k, n
)

// reqWords is the fixed size of a request, in words.
const reqWords = 32

// helloMagic starts the link hello.
const helloMagic = 0x31524c4548464321 // "!CFHELR1" little-endian

// maxCount bounds the instances of one request (a refill of COTs, a batch of triples) and the
// elements of a linear layer's operands, so that a request cannot make the helper allocate
// without bound.
const maxCount = 1 << 28

// PRG stream purposes (the top byte of a prg.NewStream number).
const (
	purDelta    = 1  // Δ of the COTs a party sends
	purKeys     = 2  // keys of the COTs a party sends, per OT stream
	purBits     = 3  // choice bits of the COTs a party receives, per OT stream
	purTriple   = 4  // triple shares, per OT stream
	purWeight   = 5  // B of a weight tensor, per id
	purMaskA    = 6  // A of a linear call, per call
	purMaskR    = 7  // R of a linear call, per call
	purTriple1  = 8  // party 1's triple shares (d1, e1), per OT stream
	purOTMsgs   = 9  // messages of the dealt OTs a party sends, per OT stream
	purOTChoice = 10 // choices of the dealt OTs a party receives, per OT stream
	purMat0     = 11 // party 0's matrix triple shares (A0, B0, C0), per call
	purMat1     = 12 // party 1's matrix triple shares (A1, B1), per call
)

// streamID is the PRG stream number of a purpose and an index.
func streamID(purpose uint8, idx uint64) uint64 { return uint64(purpose)<<56 | idx&(1<<56-1) }

// Link is a data party's (0 or 1) connection to the helper, with the pairwise seed it shares
// with it. Requests are serialised (a request and its reply are atomic), so a Link may be shared
// by the OT streams of a session running in parallel.
type Link struct {
	conn  *transport.Conn
	party int
	seed  prg.Seed
	where string // the helper's address, for errors ("" if unknown)
	mu    sync.Mutex
	err   error
	wait  time.Duration // time the online path spent in requests (sending, the helper's work, the reply)
	// prefetch is the COTs (dealt OTs of each shape) a receiving Core asks for ahead, in the
	// background (0: none).
	prefetch int
	bg       sync.WaitGroup // the background fetches in flight (Done waits for them)
	demand   int64          // requests sent on the critical path
	ah       *ahead         // dealing ahead (SetAhead), or nil
}

// reqMode is how a request is sent: on the critical path, its time counted in Wait (reqTimed)
// or by the caller (reqUntimed), or in the background (reqBackground: a prefetch, or dealing
// ahead).
type reqMode uint8

const (
	reqTimed reqMode = iota
	reqUntimed
	reqBackground
	reqPrepare // party 1's shares computed ahead (Linear.Prepare): a reply dealt ahead, waited for offline
)

// SetPrefetch makes the cores on this link fetch ahead in the background, so that the next draw
// finds the helper's part ready (an offline phase for the helper's dealing): the next n COTs of
// their stream after each refill (memory: n blocks, 16n bytes, per OT stream), and the next n
// dealt OTs of a shape once a draw has used those held (memory: n·w words per shape and OT
// stream, w the words per message). The last prefetch of a session goes unused (up to 16n bytes
// per stream, n·w·l bits per shape, more from the helper). Set it before the first draw; 0 turns
// it off.
func (l *Link) SetPrefetch(n int) { l.prefetch = max(0, min(n, maxCount)) }

// HelperError is a failure of the link to the helper (as opposed to one of the other data
// party): the session layer names the helper instead of blaming the peer.
type HelperError struct {
	// Where is the helper's address ("" if unknown).
	Where string
	Err   error
}

func (e *HelperError) Error() string { return e.Helper() + ": " + e.Err.Error() }

func (e *HelperError) Unwrap() error { return e.Err }

// Helper names the helper: "the helper at ADDR", or "the helper".
func (e *HelperError) Helper() string {
	if e.Where == "" {
		return "the helper"
	}
	return "the helper at " + e.Where
}

// SetWhere records the helper's address for the link's errors.
func (l *Link) SetWhere(addr string) { l.where = addr }

// NewLink starts the link of data party `party` over conn (its connection to the helper): it
// draws the pairwise seed k_{party,2} from crypto/rand and sends it with a hello, and checks the
// helper's acknowledgement. Both data parties call it at session start; the helper runs
// [AcceptLink] at the other end.
func NewLink(ctx context.Context, conn *transport.Conn, party int) (*Link, error) {
	if conn == nil {
		return nil, errors.New("dealer: NewLink: nil connection")
	}
	if party != 0 && party != 1 {
		return nil, fmt.Errorf("dealer: NewLink: data party %d (want 0 or 1)", party)
	}
	seed, err := prg.RandomSeed()
	if err != nil {
		return nil, fmt.Errorf("dealer: NewLink: %w", err)
	}
	msg := make([]byte, 8+8+prg.SeedSize)
	putU64(msg[0:], helloMagic)
	putU64(msg[8:], uint64(party))
	copy(msg[16:], seed[:])
	if err := conn.Send(ctx, msg); err != nil {
		return nil, fmt.Errorf("dealer: link hello: %w", err)
	}
	if err := conn.Flush(ctx); err != nil {
		return nil, fmt.Errorf("dealer: link hello: %w", err)
	}
	var ack [16]byte
	if err := conn.Recv(ctx, ack[:]); err != nil {
		return nil, fmt.Errorf("dealer: link hello: no acknowledgement from the helper: %w", err)
	}
	if getU64(ack[0:]) != helloMagic || getU64(ack[8:]) != uint64(party) {
		return nil, errors.New("dealer: link hello: the helper's acknowledgement does not match")
	}
	return &Link{conn: conn, party: party, seed: seed}, nil
}

// NewLinkWithSeed is NewLink without the exchange: the link of a party whose seed the helper
// already has (tests, and one-process runs that build all three parties together).
func NewLinkWithSeed(conn *transport.Conn, party int, seed prg.Seed) *Link {
	return &Link{conn: conn, party: party, seed: seed}
}

// Party is the data party (0 or 1) at this end of the link.
func (l *Link) Party() int { return l.party }

// Conn is the connection to the helper (for statistics).
func (l *Link) Conn() *transport.Conn { return l.conn }

// Wait is the time this party has spent in requests to the helper: sending them, the helper's
// dealing and receiving the replies (requests are serialised, so it is at most the wall-clock
// time since the link started). It is what an offline phase would take off the online one.
func (l *Link) Wait() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.wait
}

// Err is the error that made the link unusable, or nil.
func (l *Link) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// prg returns the generator of a purpose and index from this party's pairwise seed.
func (l *Link) prg(purpose uint8, idx uint64) *prg.PRG {
	return prg.NewStream(l.seed, streamID(purpose, idx))
}

// Done tells the helper that this party will send no more requests.
func (l *Link) Done(ctx context.Context) error {
	l.stopAhead()
	l.bg.Wait() // a prefetch still in flight gets its reply first
	return l.call(ctx, []uint64{opDone}, nil)
}

// call sends request req (padded to reqWords) and runs recv, which reads the reply from src,
// while no other request is in flight on the link. An error makes the link unusable and aborts
// it, so that the helper stops at once.
func (l *Link) call(ctx context.Context, req []uint64, recv func(src frameReader) error) error {
	return l.request(ctx, req, recv, reqTimed)
}

// addWait counts d as time the online path waited on the helper.
func (l *Link) addWait(d time.Duration) {
	l.mu.Lock()
	l.wait += d
	l.mu.Unlock()
}

// request is call; mode says whether it is on the critical path and who counts its time. A
// request on the critical path is recorded for dealing ahead, or answered from the replies
// dealt ahead.
func (l *Link) request(ctx context.Context, req []uint64, recv func(src frameReader) error, mode reqMode) error {
	var r [reqWords]uint64
	if len(req) > reqWords {
		return fmt.Errorf("dealer: internal error: a request of %d words", len(req))
	}
	copy(r[:], req)
	if l.ah != nil && mode != reqBackground {
		l.ah.record(&r)
		if served, err := l.serveAhead(ctx, &r, recv, mode); served {
			return err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if mode != reqBackground {
		l.demand++
	}
	if l.err != nil {
		var he *HelperError
		if errors.As(l.err, &he) {
			return &HelperError{Where: l.where, Err: fmt.Errorf("link unusable after an earlier failure: %w", he.Err)}
		}
		return fmt.Errorf("dealer: link unusable after an earlier failure: %w", l.err)
	}
	start := time.Now()
	defer func() {
		if mode == reqTimed {
			l.wait += time.Since(start)
		}
	}()
	err := l.conn.SendUint64s(ctx, r[:])
	if err == nil {
		err = l.conn.Flush(ctx)
	}
	if err == nil && recv != nil {
		err = recv(l.conn)
	}
	if err != nil {
		l.err = &HelperError{Where: l.where, Err: err}
		actx, cancel := context.WithTimeout(context.Background(), timeoutAbort)
		_ = l.conn.Abort(actx, l.err.Error())
		cancel()
		return l.err
	}
	return nil
}

// requestMany sends the requests reqs in one flight and then reads their replies in order
// (recvs[i] reads the reply to reqs[i]), while no other request is in flight on the link: the
// helper answers a link's requests in order, so the round trips of a batch of background fetches
// overlap. Errors are as request's.
func (l *Link) requestMany(ctx context.Context, reqs [][reqWords]uint64, recvs []func(src frameReader) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return fmt.Errorf("dealer: link unusable after an earlier failure: %w", l.err)
	}
	var err error
	for i := range reqs {
		if err = l.conn.SendUint64s(ctx, reqs[i][:]); err != nil {
			break
		}
	}
	if err == nil {
		err = l.conn.Flush(ctx)
	}
	for i := 0; err == nil && i < len(recvs); i++ {
		err = recvs[i](l.conn)
	}
	if err != nil {
		l.err = &HelperError{Where: l.where, Err: err}
		actx, cancel := context.WithTimeout(context.Background(), timeoutAbort)
		_ = l.conn.Abort(actx, l.err.Error())
		cancel()
		return l.err
	}
	return nil
}

// Abort makes the link unusable and aborts its connection (the helper fails at once).
func (l *Link) Abort(reason string) {
	l.stopAhead()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = errors.New("dealer: aborted: " + reason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeoutAbort)
	defer cancel()
	_ = l.conn.Abort(ctx, reason)
}

func putU64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

func getU64(b []byte) uint64 {
	var v uint64
	for i := 0; i < 8; i++ {
		v |= uint64(b[i]) << (8 * i)
	}
	return v
}

// frameElems bounds the elements of one frame of a long reply (8 MiB of words).
const frameElems = 1 << 20

// sendWords sends v in frames of at most frameElems words.
func sendWords(ctx context.Context, c *transport.Conn, v []uint64) error {
	for off := 0; off < len(v) || off == 0; off += frameElems {
		if err := c.SendUint64s(ctx, v[off:min(len(v), off+frameElems)]); err != nil {
			return err
		}
		if len(v) == 0 {
			break
		}
	}
	return nil
}

// recvWords receives what sendWords sent with the same len(dst).
func recvWords(ctx context.Context, c frameReader, dst []uint64) error {
	for off := 0; off < len(dst) || off == 0; off += frameElems {
		if err := c.Recv(ctx, bitvec.Bytes(dst[off:min(len(dst), off+frameElems)])); err != nil {
			return err
		}
		if len(dst) == 0 {
			break
		}
	}
	return nil
}

// sendPacked sends the l-bit values v in frames of at most frameElems values.
func sendPacked(ctx context.Context, c *transport.Conn, v []uint64, l int) error {
	for off := 0; off < len(v); off += frameElems {
		if err := c.SendPacked(ctx, v[off:min(len(v), off+frameElems)], l); err != nil {
			return err
		}
	}
	return nil
}

// recvPacked receives what sendPacked sent with the same len(dst) and l.
func recvPacked(ctx context.Context, c frameReader, dst []uint64, l int) error {
	if l < 1 || l > 64 {
		return fmt.Errorf("dealer: bit width %d outside 1..64", l)
	}
	tc, _ := c.(*transport.Conn)
	var buf []uint64
	for off := 0; off < len(dst); off += frameElems {
		part := dst[off:min(len(dst), off+frameElems)]
		if tc != nil {
			if err := tc.RecvPacked(ctx, part, l); err != nil {
				return err
			}
			continue
		}
		nw := transport.PackedWords(len(part), l)
		if cap(buf) < nw {
			buf = make([]uint64, nw)
		}
		buf = buf[:nw]
		if err := recvBits(ctx, c, buf, len(part)*l); err != nil {
			return err
		}
		transport.Unpack(part, buf, l)
	}
	return nil
}

// recvBits receives what transport.Conn.SendBits sent with the same nbits into the first
// bitvec.Words(nbits) words of dst (the bits past nbits zeroed).
func recvBits(ctx context.Context, c frameReader, dst []uint64, nbits int) error {
	if tc, ok := c.(*transport.Conn); ok {
		return tc.RecvBits(ctx, dst, nbits)
	}
	nw := bitvec.Words(nbits)
	if nw > 0 {
		dst[nw-1] = 0
	}
	if err := c.Recv(ctx, bitvec.Bytes(dst[:nw])[:(nbits+7)/8]); err != nil {
		return err
	}
	bitvec.ClearTail(dst, nbits)
	return nil
}

// PackedFrames is the wire size in bytes of n l-bit values sent by sendPacked.
func PackedFrames(n, l int) int64 {
	var b int64
	for off := 0; off < n; off += frameElems {
		b += int64(transport.PackedBytes(min(frameElems, n-off), l)) + transport.HeaderSize
	}
	return b
}
