package streams

import (
	"context"

	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// OT is an OT source as the protocol sessions use it: one stream's correlated, random and
// chosen-message 1-of-2 OT and 1-out-of-N OT, with the method shapes of package ot. IKNP
// (*ot.Session) and Ferret's silent OT (*ferret.Session) both provide it, so every protocol runs
// on either with unchanged results; only the traffic and time differ.
type OT interface {
	// Party is this party's index (0 or 1).
	Party() int
	// Conn is the stream's connection (phase labels, statistics, aborts).
	Conn() *transport.Conn
	// Err is the error that made the source unusable, or nil.
	Err() error

	SendCOT(ctx context.Context, l int, x, r []uint64) error
	RecvCOT(ctx context.Context, l int, b, y []uint64) error
	SendCOTWide(ctx context.Context, w, l int, x, r []uint64) error
	RecvCOTWide(ctx context.Context, w, l int, b, y []uint64) error
	SendROTWide(ctx context.Context, w, l int, m0, m1 []uint64) error
	RecvROTWide(ctx context.Context, w, l int, b, m []uint64) error
	SendOTN(ctx context.Context, N, l int, msgs []uint64) error
	RecvOTN(ctx context.Context, N, l int, c []uint8, m []uint64) error
}

// Of returns sessions of one concrete OT source (e.g. []*ot.Session) as a slice of OT.
func Of[S OT](sessions []S) []OT {
	out := make([]OT, len(sessions))
	for i, s := range sessions {
		out[i] = s
	}
	return out
}
