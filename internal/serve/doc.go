// Package serve runs secure two-party inference sessions over the network: the handshake that
// both parties perform before any protocol message, one party's end of a session (handshake,
// backend set-up, the program on the VM, a per-layer report), a server that runs concurrent
// sessions for many clients with draining on shutdown, the client's dialer (with optional TLS),
// and both parties in one process over loopback for demos and tests.
//
// # Session
//
// A session over one TCP (or TLS) connection, plus Options.Streams-1 stream connections, is:
//
//  1. the handshake (Handshake), on the raw connection, bounded by the timeout: each side sends
//     its hello (protocol version, role, program ID, ring and scale, backend, source model), reads
//     the peer's, compares (Compare) and sends a verdict; any difference ends both sides with the
//     same message naming what differs;
//  2. with several streams, the stream connections: the client opens them and presents on each
//     the random session token from the server's acceptance; the server matches them to the
//     session by token (refusing unknown tokens) within a deadline;
//  3. the transport connection (protocols/transport) over the same socket, one phase per
//     instruction for the report;
//  4. the backend's set-up (BackendFunc, e.g. sciot's base OTs), then the program on a vm.Machine;
//  5. the client's acknowledgement ("done"), which the server waits for before closing.
//
// Every wait for the peer is bounded by Options.Timeout and every network call takes the
// session's context. A failing party aborts the transport connection with its reason, so the
// peer fails at once with that reason instead of timing out.
//
// The wire format of the handshake is documented in docs/usage.md.
package serve
