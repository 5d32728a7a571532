package ot

import (
	"context"

	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// A Core is an OT source reduced to what only it can do: 128-bit correlated OTs with a global
// Δ in both directions between this party and the peer on one connection. In a COT that this
// party sends, it gets a key k_i and the peer gets k_i ⊕ b_i·Δ, with Δ this party's and the
// same for every COT it sends; in a COT it receives, roles swap. Everything else — COT_l, random
// and chosen-message OT, 1-out-of-N OT, batch headers, framing, argument checks, sticky errors —
// is derived once from a Core by [Session] (see [New]).
//
// The draws of the two parties pair up in order: the i-th COT this party draws as sender is
// the i-th the peer draws as receiver. A draw may exchange messages with the peer (IKNP's
// extension matrix, Ferret's refills), so both parties must draw the same numbers of COTs in
// the same order, and a receiver's draw of n COTs must meet the sender's draw of n (the
// derived layer keeps to this; it never splits a draw differently at the two parties).
//
// A core whose receiver chooses its bits implements [ChosenCore]; otherwise the receiver's
// bits are random and the derived layer derandomises them with one bit per instance. Optional
// interfaces: [OTNCore] (a native 1-out-of-N extension), [DealtCore] (short random OTs dealt by a
// third party), [Reservoir] (COTs made in advance that can be carved into ranges), [Forker]
// (independent streams over other connections).
type Core interface {
	// Party is this party's index (0 or 1).
	Party() int
	// Conn is the connection the core's messages travel on.
	Conn() *transport.Conn
	// Err is the error that made the core unusable, or nil.
	Err() error
	// Delta is Δ of the COTs this party sends (secret; never sent).
	Delta() prg.Block
	// Count is the index in its stream of the next COT this party draws as sender (send) or
	// as receiver: the derived layer's hash tweaks and batch headers use it, so it must count
	// every COT drawn, and the peer's count in the opposite direction must be the same.
	Count(send bool) uint64
	// Domain is the high word of the hash tweaks of the derived OTs built on the COTs that
	// party sender sends, for the given purpose (PurposePads, PurposeOTN). Its low 16 bits are
	// zero (the derived layer uses them), and no two (stream, direction, purpose) of any
	// core that may share Δ with this one give the same word.
	Domain(sender int, purpose uint8) uint64
	// Frame is the number of instances per frame of a derived batch (a batch of more is
	// chunked into frames of Frame instances; the peer's core must give the same number).
	Frame() int
	// SendCOT draws the next n COTs this party sends: f gets them in order, in pieces, with
	// the offset of each piece's first COT in the draw. A piece is valid only during f.
	SendCOT(ctx context.Context, n int, f func(off int, k []prg.Block)) error
	// RecvCOT draws the next n COTs this party receives, with random choice bits: f gets the
	// blocks k_i ⊕ b_i·Δ in pieces, and the piece's choice bits, bit i of the piece being bit
	// bit+i of bits. A piece is valid only during f.
	RecvCOT(ctx context.Context, n int, f func(off int, m []prg.Block, bits []uint64, bit int)) error
}

// Tweak purposes of Core.Domain.
const (
	// PurposePads: the hashes of the 1-of-2 kinds (COT_l, ROT, chosen OT).
	PurposePads uint8 = 1
	// PurposeOTN: the hashes of the 1-out-of-N OT derived from log2 N COTs per instance.
	PurposeOTN uint8 = 3
)

// A ChosenCore is a core whose receiver chooses its choice bits in the draw itself (IKNP:
// they go into the extension matrix), so that a derived batch needs no derandomisation bit.
type ChosenCore interface {
	Core
	// RecvChosenCOT draws the next n COTs this party receives with the packed choice bits b
	// (at least bitvec.Words(n) words; bits past n are ignored): f gets the blocks
	// k_i ⊕ b_i·Δ in pieces, as in RecvCOT.
	RecvChosenCOT(ctx context.Context, n int, b []uint64, f func(off int, m []prg.Block)) error
}

// An OTNCore is a core with a native 1-out-of-N random-OT extension that [Session.SendOTN] and
// [Session.RecvOTN] use in place of the derivation from log2 N COTs per instance (IKNP's
// KK13). The session frames and checks the batch (header, acknowledgement, replies); the core
// runs the extension, whose messages follow the receiver's batch header.
type OTNCore interface {
	Core
	// OTNCount is the index of the next 1-of-N instance this party draws as sender (send) or
	// receiver, for the batch header.
	OTNCount(send bool) uint64
	// SendOTNPads draws n random 1-of-N OTs as sender: for each group of instances from i0
	// (a multiple of 64), f(i0, v, pads) gets the pads of message v, for v = 0, 1, …, N−1 in
	// turn (the low l bits of each block are used).
	SendOTNPads(ctx context.Context, N, n int, f func(i0, v int, pads []prg.Block)) error
	// RecvOTNPads draws len(c) random 1-of-N OTs as receiver with choices c: f(i0, pads)
	// gets the pads of messages c[i0], c[i0+1], … .
	RecvOTNPads(ctx context.Context, N int, c []uint8, f func(i0 int, pads []prg.Block)) error
}

// A DealtCore is a core whose random OTs come ready-made from a dealer (the helper of the
// three-party setting, package dealer) in the shape a batch needs: random 1-out-of-N OTs with w
// l-bit words per message, whose sender's messages and receiver's choices each party draws from
// its own seed shared with the dealer, so that only the receiver's chosen message — w·l bits per
// instance — travels, from the dealer to the receiver. [Session] derives COT_l, RCOT, random and
// chosen-message OT (N = 2) and 1-out-of-N OT from these instead of from the core's 128-bit COTs,
// with the same batch headers, derandomisation bits and replies between the two parties as on
// any random-choice core (so the parties' traffic is that of the generic derivation, and the
// hashing of COTs disappears); block COTs still come from the core's COTs.
//
// The draws pair up as the COTs do: the i-th dealt batch this party draws as sender is the i-th
// the peer draws as receiver, with the same N, w, l and n.
type DealtCore interface {
	Core
	// DealtCount is the index of the next dealt OT instance this party draws as sender (send) or
	// receiver, for the batch headers (the peer's count in the opposite direction is the same).
	DealtCount(send bool) uint64
	// SendDealt draws the next n = len(msgs)/(N·w) dealt OTs this party sends: word t of message
	// v of instance i (l bits) goes to msgs[(i·N+v)·w + t]. It sends nothing to the peer.
	SendDealt(ctx context.Context, N, w, l int, msgs []uint64) error
	// SendDealtRaw draws the same instances as SendDealt, packed as the dealer's stream holds
	// them: instance i's S = ⌈N·w·l/64⌉ words at raw[i·S : (i+1)·S] (n = len(raw)/S), word t of
	// message v at bits [(v·w + t)·l, (v·w + t + 1)·l) of them; bits past N·w·l are random.
	SendDealtRaw(ctx context.Context, N, w, l int, raw []uint64) error
	// RecvDealt draws the next n = len(out)/w dealt OTs this party receives. It writes the
	// random choices at once to c (log2 N bits per instance, packed: instance i's at bits
	// [i·log2 N, (i+1)·log2 N); at least bitvec.Words(n·log2 N) words, bits past the last
	// cleared) and returns wait, which fills out[i·w + t] with word t of message c_i once the
	// dealer's reply is in. The caller must call wait exactly once, before it reads out; other
	// draws may come first (batches interleaved on one session each wait for their own).
	RecvDealt(ctx context.Context, N, w, l int, c, out []uint64) (wait func() error, err error)
}

// A Reservoir is a core whose COTs are made in advance in large refills (Ferret): what is left
// before the next refill can be carved into ranges, so that batches interleaved on one
// connection (which would otherwise meet a refill's frames in different places) each draw from
// their own range.
type Reservoir interface {
	Core
	// Available returns how many COTs this party can draw as sender and as receiver before the
	// next refill.
	Available() (send, recv int)
	// Drawn returns the COTs this party has drawn (or dropped) so far as sender and receiver.
	Drawn() (send, recv uint64)
	// Renew makes sure that at least send and recv COTs are available without a refill in the
	// middle, dropping what is left and refilling now in a direction that holds fewer. Both
	// parties call it with the same amounts mirrored (the peer's send is this party's recv).
	Renew(ctx context.Context, send, recv int) error
	// Carve returns a core that draws the next send and recv available COTs and never
	// refills, and moves this core past them. Both parties carve the same ranges in the same
	// order (mirrored).
	Carve(send, recv int) (Core, error)
}

// A Forker is a core that can start an independent stream over another connection to the same
// peer (see [Session.Fork]).
type Forker interface {
	Core
	Fork(ctx context.Context, conn *transport.Conn) (Core, error)
}
