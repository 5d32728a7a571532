package streams

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// A Hello is what a protocol session says about itself on each of its streams when it starts,
// so that two parties that would compute garbage together (different protocols, versions, rings,
// stream layouts or options) fail at once with an error that names the difference.
//
// On the wire it is one frame of HelloSize(len(Params)) bytes: the four magic bytes, then one
// byte each for Version, Party, Bits, the number of streams and the stream index, seven zero
// bytes, and one little-endian word per parameter, in order.
type Hello struct {
	Magic   string // four bytes that name the protocol, e.g. "CFLN"
	Version byte   // the protocol's wire version
	Party   int    // this party (0 or 1; Open fills it in)
	Bits    int    // the bit width l of the ring Z_2^l
	Params  []HelloParam
}

// HelloParam is one option that both parties of a session must set to the same value.
type HelloParam struct {
	Name  string // as errors show it, e.g. "Options.Budget"
	Value uint64
}

// HelloFlag is the parameter of a boolean option (1 when on, 0 when off).
func HelloFlag(name string, on bool) HelloParam {
	p := HelloParam{Name: name}
	if on {
		p.Value = 1
	}
	return p
}

// helloHeader is the size of the fixed part of a hello.
const helloHeader = 16

// HelloSize is the size in bytes of a hello with nparams parameters.
func HelloSize(nparams int) int { return helloHeader + 8*nparams }

// encode returns the hello of stream idx of nstreams.
func (h Hello) encode(nstreams, idx int) []byte {
	msg := make([]byte, HelloSize(len(h.Params)))
	copy(msg[:4], h.Magic)
	msg[4] = h.Version
	msg[5] = byte(h.Party)
	msg[6] = byte(h.Bits)
	msg[7] = byte(nstreams)
	msg[8] = byte(idx)
	for i, p := range h.Params {
		binary.LittleEndian.PutUint64(msg[helloHeader+8*i:], p.Value)
	}
	return msg
}

// Exchange sends h on stream idx of a session with nstreams streams (1 ≤ nstreams ≤ MaxStreams)
// over conn, receives the peer's hello and checks that the two agree: the same magic, version,
// ring, number of streams, stream index and parameters, and the other party. proto names the
// protocol package in errors ("linear: New: stream 0: ...").
func (h Hello) Exchange(ctx context.Context, proto string, conn *transport.Conn, nstreams, idx int) error {
	if len(h.Magic) != 4 || h.Party < 0 || h.Party > 1 || h.Bits < 1 || h.Bits > 64 ||
		nstreams < 1 || nstreams > MaxStreams || idx < 0 || idx >= nstreams {
		return fmt.Errorf("%s: New: stream %d: invalid hello (magic %q, party %d, %d bits, stream %d of %d)",
			proto, idx, h.Magic, h.Party, h.Bits, idx, nstreams)
	}
	msg := h.encode(nstreams, idx)
	if err := conn.Send(ctx, msg); err != nil {
		return fmt.Errorf("%s: New: hello on stream %d: %w", proto, idx, err)
	}
	peer := make([]byte, len(msg))
	if err := conn.Recv(ctx, peer); err != nil {
		return fmt.Errorf("%s: New: hello on stream %d: %w", proto, idx, err)
	}
	if problem := h.compare(proto, msg, peer); problem != "" {
		return fmt.Errorf("%s: New: stream %d: %s", proto, idx, problem)
	}
	return nil
}

// Open starts the streams of a protocol session over the OT sessions ots, stream i on ots[i]: it
// checks them (see Party), exchanges h on every stream with this party's index filled in, and
// returns that index and the Group of the streams (see NewGroup for proto and minSplit).
func Open(ctx context.Context, proto string, h Hello, minSplit int, ots []*ot.Session) (party int, g *Group, err error) {
	if party, err = Party(proto, ots); err != nil {
		return 0, nil, err
	}
	h.Party = party
	conns := make([]*transport.Conn, len(ots))
	for i, o := range ots {
		conns[i] = o.Conn()
		if err := h.Exchange(ctx, proto, conns[i], len(ots), i); err != nil {
			return 0, nil, err
		}
	}
	return party, NewGroup(proto, minSplit, conns), nil
}

// compare returns what differs between this party's hello msg and the peer's, or "".
func (h Hello) compare(proto string, msg, peer []byte) string {
	switch {
	case string(peer[:4]) != h.Magic:
		return fmt.Sprintf("the peer is not a %s session", proto)
	case peer[4] != h.Version:
		return fmt.Sprintf("the peer speaks version %d, this party %d", peer[4], h.Version)
	case peer[5] == msg[5]:
		return fmt.Sprintf("both parties are party %d", h.Party)
	case peer[5] > 1:
		return fmt.Sprintf("the peer claims to be party %d", peer[5])
	case peer[6] != msg[6]:
		return fmt.Sprintf("the peer uses Z_2^%d, this party Z_2^%d", peer[6], msg[6])
	case peer[7] != msg[7] || peer[8] != msg[8]:
		return fmt.Sprintf("the peer has %d streams and this is its stream %d; this party has %d and stream %d",
			peer[7], peer[8], msg[7], msg[8])
	}
	for i, p := range h.Params {
		if v := binary.LittleEndian.Uint64(peer[helloHeader+8*i:]); v != p.Value {
			return fmt.Sprintf("the parties disagree on %s: the peer's is %d, this party's %d", p.Name, v, p.Value)
		}
	}
	return ""
}
