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
// interfaces: [OTNCore] (a native 1-out-of-N extension), [Reservoir] (COTs made in advance that
// can be carved into ranges), [Forker] (independent streams over other connections).
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
