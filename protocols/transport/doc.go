// Package transport is the two-party channel under every protocol: a framed,
// buffered, full-duplex connection over TCP (or an in-memory pipe for tests)
// with per-phase communication accounting and an optional network model.
//
// # Wire format
//
// A message is a frame: a 4-byte little-endian length followed by that many
// payload bytes. The length 0xFFFFFFFF announces an abort frame (2-byte length
// and a UTF-8 reason); the peer's next receive then fails with an
// [*AbortError]. Word slices travel as their in-memory bytes, so both parties
// must be little-endian (the OT session checks this at start-up).
//
// # Behaviour
//
// Sends are buffered: frames are coalesced until [Conn.Flush], a receive, or
// a full buffer. A background goroutine reads incoming frames ahead of the
// receives (see Receive buffering), so two parties may both send large
// messages before either receives without deadlocking. Every receive waits at most [Options.Timeout] (and
// every socket write likewise), and every call that touches the network takes
// a context.Context whose cancellation interrupts it. A peer that closes
// gives [ErrPeerClosed]; a stalled peer gives [ErrTimeout]; neither hangs.
//
// # Receive buffering
//
// The reader goroutine reads a frame's payload only when what this party does
// admits it, so a peer that sends what the protocol does not wait for costs
// the peer (its writes block), not this party's memory:
//
//   - frames are read ahead up to [Options.MaxReadAhead] bytes (default
//     4 MiB, raised by [Conn.SetReadAhead] while a protocol interleaves
//     chunks), which keeps the link busy while this party computes;
//   - while this party writes to the socket, the bound rises by the bytes of
//     its own current flight (sent since it last received), up to
//     [Options.MaxQueued]: two parties that both send before they receive
//     then drain each other (a deadlock would need each flight to exceed the
//     other's plus the read-ahead), as the protocols rely on;
//   - past these bounds, a frame is read only when a receive waits for the
//     next frame and expects exactly its length ([Conn.Recv]; [Conn.RecvFrame]
//     expects any length up to [Options.MaxFrame]); its buffer grows as its
//     bytes arrive. A frame announced with another length while a receive
//     waits ends the connection at once with [ErrFrameSize], before any of
//     its payload is read.
//
// A peer can thus make a Conn hold at most the read-ahead bound (or that
// plus this party's own flight while it writes) of frames the protocol did
// not ask for, plus the one frame the waiting receive asked for.
//
// # Accounting
//
// A Conn counts, per phase label set with [Conn.SetPhase], the bytes and
// frames it sent and received (including the 4-byte frame headers) and its
// rounds. A round is a flight: a maximal run of consecutive sends, so a
// protocol in which P0 sends, P1 answers and P0 reads has one round at each
// party; the round count of a protocol is the sum over the two parties.
// While chunks of a batch are interleaved round by round ([Conn.SetYield]),
// a flight is one round of the interleaving: the caller ends it with
// [Conn.EndFlight], and the receives inside it do not.
//
// # Network model
//
// With [Options.Net] set, every incoming frame is delivered no earlier than
// RTT/2 after it has been fully serialised over a link of the given
// bandwidth (frames queue behind each other on the link). This emulates the
// papers' LAN and WAN settings ([LAN], [WAN]) on loopback.
//
// A Conn may be used by one goroutine sending and one goroutine receiving at
// the same time; Close and the statistics accessors may be called from any
// goroutine.
package transport
