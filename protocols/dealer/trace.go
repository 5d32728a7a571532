package dealer

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The first inference's offline phase. Dealing ahead (ahead.go) predicts inference k ≥ 2 from
// the requests of the inferences before it; the first inference has none before it in its
// session. Its requests are a function of the program, the data party and the session's OT
// streams, not of any value: a dealt-OT request names its sequence and first instance (which
// start at 0 in every session), a linear request its call number (from 0), the stateful kinds
// follow the streams' order, and which data party receives a batch's OTs depends only on the
// protocol's schedule. So the requests one session's first inference made are exactly those of
// any later session's first inference of the same program, party and streams: a Trace, saved
// by the first session (Link.FirstTrace) and given to a later one (Link.SetFirstTrace), lets
// that session fetch everything its first inference needs at the first inference's start,
// before the input is used, and run that inference with no request on its critical path. A
// trace that does not match (another program, another stream count) is caught: its Key names
// what it was recorded for, and a request of a stateful kind out of its stream's order is an
// error, never a silent mismatch (ahead.go).

// Trace is the requests to the helper that one inference made on one data party's link, in the
// order they were sent, with the key of what they were recorded for (the caller's digest of the
// program, the party and the session's options).
type Trace struct {
	Party int
	Key   [32]byte
	reqs  [][reqWords]uint64
}

// Len is the number of requests in the trace.
func (t *Trace) Len() int { return len(t.reqs) }

// ReplyBytes is the payload bytes of the helper's replies to the trace's requests (what dealing
// them ahead holds in memory).
func (t *Trace) ReplyBytes() (int64, error) {
	var n int64
	for i := range t.reqs {
		fs, err := replyFrames(&t.reqs[i])
		if err != nil {
			return 0, err
		}
		for _, f := range fs {
			n += int64(f)
		}
	}
	return n, nil
}

// traceMagic starts an encoded trace ("CFTRACE1").
var traceMagic = [8]byte{'C', 'F', 'T', 'R', 'A', 'C', 'E', '1'}

// maxTraceRequests bounds the requests of a decoded trace.
const maxTraceRequests = 1 << 24

// MarshalBinary encodes the trace: magic, party, key, request count, then each request as its
// number of words up to the last non-zero one (a byte) and those words (little-endian).
func (t *Trace) MarshalBinary() ([]byte, error) {
	b := append([]byte(nil), traceMagic[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(t.Party))
	b = append(b, t.Key[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(t.reqs)))
	for _, r := range t.reqs {
		n := reqWords
		for n > 0 && r[n-1] == 0 {
			n--
		}
		b = append(b, byte(n))
		for _, w := range r[:n] {
			b = binary.LittleEndian.AppendUint64(b, w)
		}
	}
	return b, nil
}

// UnmarshalBinary decodes a trace written by MarshalBinary, checking every request as the
// helper would (kind and sizes).
func (t *Trace) UnmarshalBinary(b []byte) error {
	if len(b) < 8+8+32+8 || [8]byte(b[:8]) != traceMagic {
		return errors.New("dealer: not a helper trace (bad magic or too short)")
	}
	party := binary.LittleEndian.Uint64(b[8:])
	if party > 1 {
		return fmt.Errorf("dealer: helper trace of party %d (want 0 or 1)", party)
	}
	var key [32]byte
	copy(key[:], b[16:48])
	n := binary.LittleEndian.Uint64(b[48:])
	if n > maxTraceRequests {
		return fmt.Errorf("dealer: helper trace of %d requests (at most %d)", n, maxTraceRequests)
	}
	b = b[56:]
	reqs := make([][reqWords]uint64, 0, n)
	for i := range n {
		if len(b) < 1 || int(b[0]) > reqWords || len(b) < 1+8*int(b[0]) {
			return fmt.Errorf("dealer: helper trace truncated or corrupt at request %d of %d", i+1, n)
		}
		var r [reqWords]uint64
		for j := range int(b[0]) {
			r[j] = binary.LittleEndian.Uint64(b[1+8*j:])
		}
		b = b[1+8*int(b[0]):]
		if _, err := replyFrames(&r); err != nil {
			return fmt.Errorf("dealer: helper trace, request %d: %w", i+1, err)
		}
		reqs = append(reqs, r)
	}
	if len(b) != 0 {
		return fmt.Errorf("dealer: helper trace has %d bytes after its %d requests", len(b), n)
	}
	t.Party, t.Key, t.reqs = int(party), key, reqs
	return nil
}

// FirstTrace is the requests the session's first inference made on this link (after
// EndInference(0); dealing ahead must be on, SetAhead, since it is what records them), with
// the given key. It is an error when no first inference was recorded.
func (l *Link) FirstTrace(key [32]byte) (*Trace, error) {
	a := l.ah
	if a == nil {
		return nil, errors.New("dealer: no trace: dealing ahead is off (SetAhead), so no inference was recorded")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.trace0 == nil {
		return nil, errors.New("dealer: no trace: the first inference has not ended (or made no request to the helper)")
	}
	return &Trace{Party: l.party, Key: key, reqs: a.trace0}, nil
}

// SetFirstTrace has the first inference's correlations dealt at its start (BeginInference(0)),
// before its input is used, from the requests of t: those of a first inference of the same
// program, party and streams in an earlier session. At most SetAhead's cap of replies is
// dealt: when the trace needs more, a prefix of it that fits is dealt and the rest goes on
// demand (AheadStats.FirstRequests, FirstDealt say how much). Call it after SetAhead and before
// the first inference; the caller checks t.Key against its own.
func (l *Link) SetFirstTrace(t *Trace) error {
	a := l.ah
	if a == nil {
		return errors.New("dealer: SetFirstTrace: dealing ahead is off (SetAhead 0)")
	}
	if t.Party != l.party {
		return fmt.Errorf("dealer: SetFirstTrace: a trace of party %d on party %d's link", t.Party, l.party)
	}
	if len(t.reqs) == 0 {
		return errors.New("dealer: SetFirstTrace: an empty trace")
	}
	if _, err := shiftOf(t.reqs); err != nil {
		return fmt.Errorf("dealer: SetFirstTrace: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.first = t.reqs
	return nil
}

// planFirst sets the plan of inference 0 from the first trace: its longest prefix whose
// replies fit the cap (called with a.mu held).
func (a *ahead) planFirst() {
	var total, fit int64
	n := 0
	for i := range a.first {
		fs, _ := replyFrames(&a.first[i]) // checked by UnmarshalBinary or recorded
		var b int64
		for _, f := range fs {
			b += int64(f)
		}
		total += b
		if n == i && fit+b <= a.cap {
			fit += b
			n++
		}
	}
	a.plans[0] = a.first[:n]
	a.stats.FirstRequests, a.stats.FirstDealt = len(a.first), n
	a.stats.FirstBytes, a.stats.FirstDealtBytes = total, fit
}
