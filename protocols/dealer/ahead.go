package dealer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// Dealing ahead. Everything the helper deals is input-independent, and a session that runs the
// same program several times (a batch, a served session) asks the helper for the same
// correlations each time, at positions that advance by a fixed step: the data party records the
// requests its link sends during the first inference (the trace), predicts from it the requests
// of inference k ≥ 2 and fetches their replies in the background while inference k−1 runs, so
// that inference k finds every reply in memory and sends no request to the helper.
//
// How each request of the trace advances from one inference to the next:
//
//   - dealt OTs (opDealt) are addressed by position within their shape's sequence: the first
//     instance moves by the instances of that sequence one inference draws (the requests of a
//     sequence must cover a contiguous range);
//   - linear corrections (opLinear) are addressed by call number (and weight tensor): the call
//     moves by the calls of one inference, the weight tensor stays (Linear.Period) or moves
//     with the call when party 0 numbers tensors by call (no Period: its header says so);
//   - matrix triples of products of two shared matrices (opMatMul, party 1 only) are addressed
//     by their own call number, which moves by the shared products of one inference;
//   - block COTs (opCOT) and bit triples (opTriples) are the next ones of their stream's PRG
//     streams, which the helper draws in the order of the requests: the request is the same
//     words, and the replies of a stream are handed out in the order of the trace (a request
//     that is not the next one of its stream is an error, never a silent mismatch).
//
// The requests do not always repeat every inference: the nonlinear protocols alternate which
// data party receives the OTs of a batch from the party that sent the last flight on the
// stream, a state carried from one inference into the next, so a stream's requests may swap
// between the data parties every other inference. The requests then repeat every two
// inferences. The second inference is dealt ahead as if they repeated every inference; the
// requests it makes that were not dealt (the swapped streams') go to the helper on demand, and
// the replies dealt for it and not used are dropped (AheadStats.Misses, Wasted). From the third
// inference on the period is known (1 if the second made exactly the predicted requests, else
// 2) and the prediction is exact. A request of the stateful kinds (block COTs, triples) must
// still be the next one of its stream: dealing ahead stops with an error otherwise.
//
// Both data parties do this on their own link, independently: the helper needs no change (it
// answers requests in order, position-addressed or not). Memory is bounded by the cap given to
// SetAhead (the replies held: those of the inference running and those fetched for the next);
// an inference whose replies alone exceed it is served on demand. The replies are held as they
// came off the wire (packed), so the cap is in wire bytes.

// frameReader is where a request's reply is read from: the link's connection, or the frames
// of a reply fetched ahead.
type frameReader interface {
	Recv(ctx context.Context, dst []byte) error
}

// storedFrames replays the frames of a reply fetched ahead.
type storedFrames struct {
	frames [][]byte
	i      int
}

func (s *storedFrames) Recv(_ context.Context, dst []byte) error {
	if s.i == len(s.frames) {
		return errors.New("dealer: a reply fetched ahead has fewer frames than its reader expects")
	}
	f := s.frames[s.i]
	if len(f) != len(dst) {
		return fmt.Errorf("dealer: a reply fetched ahead has a %d-byte frame where %d bytes are read", len(f), len(dst))
	}
	copy(dst, f)
	s.i++
	return nil
}

// replyFrames is the size in bytes of each frame of the helper's reply to req.
func replyFrames(req *[reqWords]uint64) ([]int, error) {
	packed := func(n, l int) []int {
		var fs []int
		for off := 0; off < n; off += frameElems {
			fs = append(fs, transport.PackedBytes(min(frameElems, n-off), l))
		}
		return fs
	}
	switch req[0] {
	case opDealt:
		w, l, n := req[4], req[5], req[7]
		if w > maxDealtWidth || l < 1 || l > 64 || n > maxCount {
			return nil, fmt.Errorf("dealer: dealt OT request with w=%d, l=%d, n=%d", w, l, n)
		}
		return packed(int(n*w), int(l)), nil
	case opCOT:
		n := req[3]
		if n > maxCount {
			return nil, fmt.Errorf("dealer: COT request of %d", n)
		}
		var fs []int
		for off := 0; off < int(2*n) || off == 0; off += frameElems {
			fs = append(fs, 8*min(frameElems, int(2*n)-off))
			if n == 0 {
				break
			}
		}
		return fs, nil
	case opTriples:
		nReg, nCorr := req[2], req[3]
		if nReg > maxCount || nCorr > maxCount {
			return nil, fmt.Errorf("dealer: triple request of %d and %d", nReg, nCorr)
		}
		return []int{transport.PackedBytes(int(nReg+2*nCorr), 1)}, nil
	case opMatMul:
		l, batch, m, n := req[2], req[3], req[4], req[6]
		if l < 1 || l > 64 || batch > maxCount || m > maxCount || n > maxCount || batch*m*n > maxCount {
			return nil, fmt.Errorf("dealer: shared product request with l=%d, %d×%d×%d outputs", l, batch, m, n)
		}
		return packed(int(batch*m*n), int(l)), nil
	case opLinear:
		sh := shapeOf(req[4:])
		if err := sh.Validate(); err != nil {
			return nil, err
		}
		if l := req[3]; l < 1 || l > 64 {
			return nil, fmt.Errorf("dealer: linear request with l=%d", l)
		}
		_, _, nz := sh.Sizes()
		return packed(nz, int(req[3])), nil
	}
	return nil, fmt.Errorf("dealer: request %d is not dealt ahead", req[0])
}

// aheadEntry is one request of an inference dealt ahead and its reply.
type aheadEntry struct {
	req    [reqWords]uint64
	inf    int // the inference (0-based) it belongs to
	sizes  []int
	bytes  int64 // the reply's payload bytes (what it holds in memory)
	wire   int64 // the request's and the reply's wire bytes
	frames [][]byte
	done   chan struct{} // closed when the reply is in (or the fetch failed)
	err    error
}

// aheadFlight is the number of requests dealt ahead sent before their replies are read.
const aheadFlight = 64

// streamKey names the stream of a stateful request (COT, triples): op and OT stream.
type streamKey struct{ op, st uint64 }

// seqKey names the sequence of a dealt OT request: stream, sender, N, w, l.
type seqKey [5]uint64

// AheadStats is what dealing ahead did on a link.
type AheadStats struct {
	// Inferences is the number of inferences served from replies dealt ahead.
	Inferences int
	// Requests and Bytes are the requests fetched ahead and their wire bytes (requests sent and
	// replies received).
	Requests int64
	Bytes    int64
	// Fetch is the wall time of the background fetches (overlapping the inferences before the
	// one they serve); Wait is the part of it an inference waited for at its start.
	Fetch, Wait time.Duration
	// LateWaits and Late count the waits of an inference served ahead for a reply still in
	// flight, and their time (none when every reply was in at its start, as BeginInference
	// ensures).
	LateWaits int64
	Late      time.Duration
	// Overlapped counts the replies party 1's shares computed ahead (Linear.Prepare) took while
	// they were still in flight: shares computed during the helper's dealing.
	Overlapped int64
	// Misses counts the requests of an inference served ahead that were not among those dealt
	// for it (sent on demand), Wasted the wire bytes (requests and replies, counted in Bytes
	// too) of replies dealt ahead and never used (a prediction that missed: see Period).
	Misses int64
	Wasted int64
	// Period is the number of inferences after which the requests repeat (1 or 2; 0 while
	// unknown): see the comment at the top of ahead.go.
	Period int
	// Off says why dealing ahead is off ("" when it is on, or was never asked for).
	Off string
	// FirstRequests and FirstBytes are the requests of the first inference's trace
	// (SetFirstTrace) and their replies' payload bytes; FirstDealt and FirstDealtBytes the part
	// dealt at the first inference's start, before its input is used (all of it unless the
	// replies exceed the cap: then the longest prefix that fits, the rest on demand). All 0
	// without a trace. FirstMisses counts the first inference's requests sent on demand.
	FirstRequests, FirstDealt   int
	FirstBytes, FirstDealtBytes int64
	FirstMisses                 int64
}

// ahead is a link's dealing ahead.
type ahead struct {
	cap int64 // bytes of replies held at most

	mu        sync.Mutex
	cond      *sync.Cond
	recording bool
	cur       [][reqWords]uint64               // the requests of the inference running
	hist      map[int][][reqWords]uint64       // the requests each inference made (the last two)
	plans     map[int][][reqWords]uint64       // the requests predicted for an inference
	planned   int                              // the last inference planned (0: none)
	addressed map[[reqWords]uint64]*aheadEntry // dealt OTs and linear corrections
	ordered   map[streamKey][]*aheadEntry      // COTs and triples, per stream, in order
	left      map[int]int                      // per inference, entries not yet used
	misses    int                              // requests of the running inference not dealt ahead
	held      int64                            // bytes of replies held or reserved
	serving   int                              // the inference served ahead now (-1: none)
	preparing int                              // the inference whose linear shares are computed ahead while it is dealt (-1: none)
	fetchDone chan struct{}                    // the background fetch in flight, or nil
	stop      bool
	idByCall  bool               // a linear layer's weight tensor is numbered by its call (Linear without Period)
	first     [][reqWords]uint64 // the first inference's requests from an earlier session (SetFirstTrace), or nil
	trace0    [][reqWords]uint64 // the requests this session's first inference made (after it ended)
	stats     AheadStats
}

// linearOnce tells dealing ahead that party 0 numbers weight tensors by call (it sends F with
// every call: Linear.Period is 0 there), so that a linear request's tensor moves with its call.
func (l *Link) linearOnce() {
	if a := l.ah; a != nil {
		a.mu.Lock()
		a.idByCall = true
		a.mu.Unlock()
	}
}

// SetAhead turns dealing ahead on (see the comment at the top of ahead.go) with at most
// capBytes bytes of replies held in memory; 0 turns it off. Set it before the first inference;
// it is off while a prefetch (SetPrefetch) is set, whose requests depend on the timing of the
// draws.
func (l *Link) SetAhead(capBytes int64) {
	if capBytes <= 0 {
		l.ah = nil
		return
	}
	a := &ahead{cap: capBytes, serving: -1, preparing: -1, addressed: map[[reqWords]uint64]*aheadEntry{},
		ordered: map[streamKey][]*aheadEntry{}, left: map[int]int{},
		hist: map[int][][reqWords]uint64{}, plans: map[int][][reqWords]uint64{}}
	a.cond = sync.NewCond(&a.mu)
	l.ah = a
}

// AheadStats is what dealing ahead did so far.
func (l *Link) AheadStats() AheadStats {
	if l.ah == nil {
		return AheadStats{}
	}
	l.ah.mu.Lock()
	defer l.ah.mu.Unlock()
	return l.ah.stats
}

// Demand is the number of requests this link sent on the critical path: every request but the
// background fetches (Link.SetPrefetch) and the replies dealt ahead.
func (l *Link) Demand() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.demand
}

// BeginInference tells the link that inference k (0-based) of count starts. Every inference's
// requests are recorded; from inference 1 on, when dealing ahead is on, and for inference 0
// when a trace of it was given (SetFirstTrace: the first inference's offline phase), the
// inference's replies are made complete first (the wait counts in Wait and AheadStats.Wait:
// the offline phase, before the inference's input is used) and the next
// inference's are fetched in the background (when k+1 < count: nothing is dealt for an
// inference that will not run, and not during inference 1, whose requests decide the period).
// It returns an error only when the link failed or ctx ended.
func (l *Link) BeginInference(ctx context.Context, k, count int) error {
	return l.BeginInferencePrepared(ctx, k, count, nil)
}

// BeginInferencePrepared is BeginInference, with prepare (when not nil) run once the inference's
// correlations are being dealt ahead, before waiting for the rest of them: it may take the
// replies of the linear layers dealt for the inference (Linear.Prepare) as they arrive, each
// wait for one counted by the caller, not in Wait, so that party 1's shares overlap the
// helper's dealing. Its error is returned as is.
func (l *Link) BeginInferencePrepared(ctx context.Context, k, count int, prepare func(context.Context) error) error {
	a := l.ah
	if a == nil {
		return nil
	}
	a.mu.Lock()
	a.cur, a.recording, a.misses = nil, true, 0
	if l.prefetch > 0 {
		a.stats.Off = "a prefetch is set (SetPrefetch)"
	}
	if k == 0 && (a.first == nil || a.stats.Off != "") || k > 0 && a.stats.Off != "" && a.planned < k {
		a.mu.Unlock()
		return nil
	}
	if k == 0 {
		// The first inference's offline phase: its requests are those of the trace.
		a.planFirst()
		if len(a.plans[0]) == 0 {
			a.mu.Unlock()
			return nil
		}
		l.startFetch(a, 0)
	} else if a.planned < k {
		// Not fetched ahead (inference 1, or inference 2 after inference 1 decided the
		// period): fetch it now, before the inference starts.
		if err := a.plan(k); err != nil {
			a.stats.Off = err.Error()
			a.mu.Unlock()
			return nil
		}
		l.startFetch(a, k)
	}
	done := a.fetchDone
	if prepare != nil {
		a.preparing = k
		a.mu.Unlock()
		err := prepare(ctx)
		a.mu.Lock()
		a.preparing = -1
		if err != nil {
			a.mu.Unlock()
			return err
		}
	}
	a.mu.Unlock()
	start := time.Now()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("dealer: waiting for inference %d's correlations dealt ahead: %w", k+1, context.Cause(ctx))
		}
	}
	waited := time.Since(start)
	l.addWait(waited)
	a.mu.Lock()
	a.stats.Wait += waited
	a.serving = k
	a.stats.Inferences++
	if k+1 < count && a.stats.Period != 0 && a.stats.Off == "" {
		if err := a.plan(k + 1); err != nil {
			a.stats.Off = err.Error()
		} else {
			l.startFetch(a, k+1)
		}
	}
	a.mu.Unlock()
	return l.Err()
}

// EndInference tells the link that inference k ended. After an inference served ahead, the
// replies dealt for it and not used are dropped, and after the second the period is decided.
// It returns an error when replies of a stateful kind (block COTs, triples) dealt for the
// inference were not used: the helper's streams would be out of step.
func (l *Link) EndInference(k int) error {
	a := l.ah
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recording = false
	a.hist[k] = a.cur
	if k == 0 && len(a.cur) > 0 {
		a.trace0 = a.cur
	}
	a.cur = nil
	delete(a.hist, k-2)
	delete(a.plans, k-1)
	if a.serving != k {
		return nil
	}
	a.serving = -1
	left := a.left[k]
	delete(a.left, k)
	var unused []*aheadEntry
	for key, e := range a.addressed {
		if e.inf == k {
			delete(a.addressed, key)
			unused = append(unused, e)
		}
	}
	for _, e := range unused {
		a.drop(e)
	}
	for sk, q := range a.ordered {
		if len(q) > 0 && q[0].inf == k {
			return fmt.Errorf("dealer: inference %d left %d of the helper's replies dealt ahead on stream %d unused: it did not make the predicted requests", k+1, left, sk.st)
		}
	}
	a.stats.Misses += int64(a.misses)
	if k == 0 {
		// Served from a trace: the period is decided by the second inference, as without one.
		a.stats.FirstMisses = int64(a.misses)
		return nil
	}
	switch ok := a.misses == 0 && left == 0; {
	case a.stats.Period == 0:
		a.stats.Period = 1
		if !ok {
			a.stats.Period = 2
		}
	case !ok && a.stats.Off == "":
		a.stats.Off = fmt.Sprintf("inference %d did not make the requests predicted with period %d (%d missed, %d replies unused)", k+1, a.stats.Period, a.misses, left)
	}
	return nil
}

// drop releases an entry that will not be used (waiting for its fetch to end).
func (a *ahead) drop(e *aheadEntry) {
	a.mu.Unlock()
	<-e.done
	a.mu.Lock()
	if e.err == nil {
		a.stats.Wasted += e.wire
	}
	a.held -= e.bytes
	e.frames = nil
	a.cond.Broadcast()
}

// stopAhead stops the background fetch (it ends after its request in flight) and drops the
// replies held.
func (l *Link) stopAhead() {
	if a := l.ah; a != nil {
		a.mu.Lock()
		a.stop = true
		a.cond.Broadcast()
		a.mu.Unlock()
	}
}

// record adds a request sent on the critical path to the running inference's.
func (a *ahead) record(req *[reqWords]uint64) {
	a.mu.Lock()
	if a.recording && req[0] != opDone {
		a.cur = append(a.cur, *req)
	}
	a.mu.Unlock()
}

// plan predicts the requests of inference k and records them in a.plans (called with a.mu
// held): with period 1 those of inference k−1 (made, or predicted) stepped by what it drew;
// with period 2 those of inference k−2 stepped by what k−2 and k−1 drew.
func (a *ahead) plan(k int) error {
	get := func(i int) ([][reqWords]uint64, bool) {
		if t, ok := a.hist[i]; ok {
			return t, true
		}
		t, ok := a.plans[i]
		return t, ok
	}
	p := max(1, a.stats.Period)
	base, ok := get(k - p)
	if !ok {
		return fmt.Errorf("internal error: no requests of inference %d to plan inference %d", k-p+1, k+1)
	}
	if len(base) == 0 {
		return errors.New("the first inference made no request to the helper")
	}
	var sh shift
	for i := k - p; i < k; i++ {
		t, ok := get(i)
		if !ok {
			return fmt.Errorf("internal error: no requests of inference %d to plan inference %d", i+1, k+1)
		}
		s, err := shiftOf(t)
		if err != nil {
			return err
		}
		sh = sh.add(s)
	}
	next := make([][reqWords]uint64, len(base))
	var total int64
	for i, r := range base {
		next[i] = sh.apply(r, a.idByCall)
		fs, err := replyFrames(&next[i])
		if err != nil {
			return err
		}
		for _, f := range fs {
			total += int64(f)
		}
	}
	if total > a.cap {
		return fmt.Errorf("one inference's replies (%d bytes) exceed the cap of %d bytes", total, a.cap)
	}
	a.plans[k], a.planned = next, k
	return nil
}

// shift is how far the positions of the requests advance over some inferences: per sequence of
// dealt OTs, the instances drawn; the linear layers' calls.
type shift struct {
	dealt   map[seqKey]uint64
	calls   uint64
	mmCalls uint64 // the products of two shared matrices
}

func (s shift) add(o shift) shift {
	out := shift{dealt: map[seqKey]uint64{}, calls: s.calls + o.calls, mmCalls: s.mmCalls + o.mmCalls}
	for k, v := range s.dealt {
		out.dealt[k] += v
	}
	for k, v := range o.dealt {
		out.dealt[k] += v
	}
	return out
}

// apply moves request r by the shift.
func (s shift) apply(r [reqWords]uint64, idByCall bool) [reqWords]uint64 {
	switch r[0] {
	case opDealt:
		r[6] += s.dealt[seqKey{r[1], r[2], r[3], r[4], r[5]}]
	case opLinear:
		if idByCall {
			r[1] += s.calls
		}
		r[2] += s.calls
	case opMatMul:
		r[1] += s.mmCalls
	}
	return r
}

// shiftOf is the shift of one inference's requests. The requests of a sequence of dealt OTs
// must cover one contiguous range, the linear calls must be consecutive.
func shiftOf(trace [][reqWords]uint64) (shift, error) {
	type span struct{ at, n uint64 }
	seqs := map[seqKey][]span{}
	var calls, mmCalls []uint64
	for _, r := range trace {
		switch r[0] {
		case opDealt:
			k := seqKey{r[1], r[2], r[3], r[4], r[5]}
			seqs[k] = append(seqs[k], span{r[6], r[7]})
		case opLinear:
			calls = append(calls, r[2])
		case opMatMul:
			mmCalls = append(mmCalls, r[1])
		case opCOT, opTriples:
		default:
			return shift{}, fmt.Errorf("request %d cannot be dealt ahead", r[0])
		}
	}
	sh := shift{dealt: map[seqKey]uint64{}, calls: uint64(len(calls)), mmCalls: uint64(len(mmCalls))}
	for k, sp := range seqs {
		slices.SortFunc(sp, func(a, b span) int { return cmp.Compare(a.at, b.at) })
		var d uint64
		for i, s := range sp {
			if i > 0 && s.at != sp[i-1].at+sp[i-1].n {
				return shift{}, fmt.Errorf("the dealt OTs of stream %d (N=%d, w=%d, l=%d) were not requested as one contiguous range", k[0], k[2], k[3], k[4])
			}
			d += s.n
		}
		sh.dealt[k] = d
	}
	for _, c := range []struct {
		calls []uint64
		what  string
	}{{calls, "the linear layers' calls"}, {mmCalls, "the products of two shared matrices"}} {
		slices.Sort(c.calls)
		for i := range c.calls {
			if i > 0 && c.calls[i] != c.calls[i-1]+1 {
				return shift{}, fmt.Errorf("%s were not consecutive", c.what)
			}
		}
	}
	return sh, nil
}

// startFetch registers the entries of inference k's plan and fetches their replies in the
// background, in the order of the requests. Called with a.mu held.
func (l *Link) startFetch(a *ahead, k int) {
	plan := a.plans[k]
	entries := make([]*aheadEntry, 0, len(plan))
	for _, r := range plan {
		e := &aheadEntry{req: r, inf: k, done: make(chan struct{})}
		e.sizes, _ = replyFrames(&e.req) // checked by plan
		for _, s := range e.sizes {
			e.bytes += int64(s)
		}
		e.wire = e.bytes + int64(len(e.sizes))*transport.HeaderSize + 8*reqWords + transport.HeaderSize
		switch r[0] {
		case opDealt, opLinear, opMatMul:
			if a.addressed[r] != nil {
				continue // the same request twice: one reply serves
			}
			a.addressed[r] = e
		default:
			sk := streamKey{r[0], r[1]}
			a.ordered[sk] = append(a.ordered[sk], e)
		}
		entries = append(entries, e)
	}
	a.left[k] = len(entries)
	done := make(chan struct{})
	a.fetchDone = done
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		defer close(done)
		start := time.Now()
		ctx := context.Background() // bounded by the transport's timeout and the link's abort
		failed := false
		// The requests go in flights of up to aheadFlight, each flight's replies read in order.
		for i := 0; i < len(entries); {
			var flight []*aheadEntry
			for i < len(entries) && len(flight) < aheadFlight {
				e := entries[i]
				a.mu.Lock()
				// Reserve the reply's memory; wait for the inference running to use some only
				// when no reply of this flight is pending (it may need them first).
				if len(flight) > 0 && !a.stop && a.held+e.bytes > a.cap && a.held > 0 {
					a.mu.Unlock()
					break
				}
				for !a.stop && a.held+e.bytes > a.cap && a.held > 0 {
					a.cond.Wait()
				}
				stop := a.stop
				if !stop && !failed {
					a.held += e.bytes
				}
				a.mu.Unlock()
				i++
				if stop || failed {
					e.err = errors.New("dealer: dealing ahead stopped")
					close(e.done)
					continue
				}
				flight = append(flight, e)
			}
			if len(flight) == 0 {
				continue
			}
			reqs := make([][reqWords]uint64, len(flight))
			recvs := make([]func(frameReader) error, len(flight))
			for j, e := range flight {
				reqs[j] = e.req
				e.frames = make([][]byte, len(e.sizes))
				recvs[j] = func(src frameReader) error {
					for f, size := range e.sizes {
						e.frames[f] = make([]byte, size)
						if err := src.Recv(ctx, e.frames[f]); err != nil {
							return err
						}
					}
					// Ready as soon as read, before the rest of the flight.
					a.mu.Lock()
					a.stats.Requests++
					a.stats.Bytes += e.wire
					a.mu.Unlock()
					close(e.done)
					return nil
				}
			}
			if err := l.requestMany(ctx, reqs, recvs); err != nil {
				failed = true
				for _, e := range flight {
					select {
					case <-e.done:
					default:
						e.err = err
						close(e.done)
					}
				}
			}
		}
		a.mu.Lock()
		a.stats.Fetch += time.Since(start)
		a.mu.Unlock()
	}()
}

// serveAhead answers a request sent on the critical path from the replies dealt ahead: served
// is false when there is none for it (the request then goes to the helper).
func (l *Link) serveAhead(ctx context.Context, req *[reqWords]uint64, recv func(frameReader) error, mode reqMode) (served bool, err error) {
	a := l.ah
	a.mu.Lock()
	if req[0] == opDone {
		a.mu.Unlock()
		return false, nil
	}
	var e *aheadEntry
	switch req[0] {
	case opDealt, opLinear, opMatMul:
		// Position-addressed: any reply dealt for exactly this request is the right one.
		if e = a.addressed[*req]; e != nil {
			delete(a.addressed, *req)
		}
	default:
		// The helper draws these in the order of the requests: only the next one of the stream
		// may be used, and none may go on demand while some of the stream are dealt ahead.
		sk := streamKey{req[0], req[1]}
		if q := a.ordered[sk]; len(q) > 0 {
			if q[0].req != *req {
				a.mu.Unlock()
				return true, fmt.Errorf("dealer: inference %d asked the helper for %v on stream %d where the replies dealt ahead are for %v: the stream would be out of step", a.serving+1, req[:4], req[1], q[0].req[:4])
			}
			e = q[0]
			a.ordered[sk] = q[1:]
		}
	}
	if e == nil {
		if a.serving >= 0 {
			a.misses++
		}
		a.mu.Unlock()
		return false, nil
	}
	a.left[e.inf]--
	a.mu.Unlock()
	select {
	case <-e.done:
	default:
		if mode == reqPrepare {
			// Party 1's share computed ahead, overlapping the fetch: an offline wait.
			select {
			case <-e.done:
			case <-ctx.Done():
				return true, context.Cause(ctx)
			}
			a.mu.Lock()
			a.stats.Overlapped++
			a.mu.Unlock()
			break
		}
		// Still in flight: the inference waits on the helper after all.
		start := time.Now()
		select {
		case <-e.done:
		case <-ctx.Done():
			return true, context.Cause(ctx)
		}
		d := time.Since(start)
		a.mu.Lock()
		a.stats.Late += d
		a.stats.LateWaits++
		a.mu.Unlock()
		l.addWait(d)
	}
	defer func() {
		a.mu.Lock()
		a.held -= e.bytes
		a.cond.Broadcast()
		a.mu.Unlock()
		e.frames = nil
	}()
	if e.err != nil {
		return true, e.err
	}
	src := &storedFrames{frames: e.frames}
	if recv != nil {
		if err := recv(src); err != nil {
			return true, err
		}
	}
	if src.i != len(src.frames) {
		return true, errors.New("dealer: a reply fetched ahead has more frames than its reader reads")
	}
	return true, nil
}

// dealtLinear returns the linear-layer requests dealt ahead for the inference now served (or
// whose correlations are being dealt: BeginInferencePrepared) and not yet used, in call order
// (none when dealing ahead is off or no inference is served ahead). Their replies may still be
// in flight.
func (l *Link) dealtLinear() [][reqWords]uint64 {
	a := l.ah
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	inf := a.serving
	if a.preparing >= 0 {
		inf = a.preparing
	}
	if inf < 0 {
		return nil
	}
	var out [][reqWords]uint64
	for r, e := range a.addressed {
		if r[0] == opLinear && e.inf == inf {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(x, y [reqWords]uint64) int { return cmp.Compare(x[2], y[2]) })
	return out
}
