package serve

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/he/scheme"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/sci"
)

// badKeyClient is a client backend that sets up the OT part of scihe honestly, then answers the HE
// hello as protocols/he does and sends a public key whose coefficients are out of range (the
// server refuses it), then runs on as if nothing happened.
func badKeyClient(ctx context.Context, conn *transport.Conn, streams []*transport.Conn, party int, r ring.Ring) (vm.Backend, error) {
	b, err := sci.New(ctx, conn, party, r, sci.Options{Streams: streams, Mode: sci.ModeOT})
	if err != nil {
		return nil, err
	}
	p, err := scheme.ParamsFor(r.Bits)
	if err != nil {
		return nil, err
	}
	var msg [16]byte // protocols/he/messages.go: "CFHE", version 1, party, l, log2 N, Q[last]^Q[0]
	copy(msg[:4], "CFHE")
	msg[4], msg[5], msg[6], msg[7] = 1, 1, byte(r.Bits), byte(p.LogN)
	binary.LittleEndian.PutUint64(msg[8:], p.Q[len(p.Q)-1]^p.Q[0])
	if err := conn.Send(ctx, msg[:]); err != nil {
		return nil, err
	}
	var peer [16]byte
	if err := conn.Recv(ctx, peer[:]); err != nil {
		return nil, err
	}
	if err := conn.Send(ctx, bytes.Repeat([]byte{0xff}, p.KeyBytes())); err != nil {
		return nil, err
	}
	return b, conn.Flush(ctx)
}

// A server that refuses the client's HE public key ends the session with its reason, and the
// client reports that reason (not "the server disconnected").
func TestRefusedHEKeyReachesClient(t *testing.T) {
	full, cfile, _, _ := mnistSmall(t)
	sopt := options(full)
	sopt.Backend, sopt.Streams = "scihe", 1
	sopt.NewBackend = func(ctx context.Context, conn *transport.Conn, streams []*transport.Conn, party int, r ring.Ring) (vm.Backend, error) {
		return sci.New(ctx, conn, party, r, sci.Options{Streams: streams, Mode: sci.ModeHE})
	}
	copt := options(cfile)
	copt.Backend, copt.Streams, copt.NewBackend = "scihe", 1, badKeyClient
	for i := range 5 { // the race between the abort and the close is timing-dependent: try a few
		ts := startServer(t, &Server{Options: sopt, MaxSessions: 1})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := client(ctx, ts.addr, copt, nil, input(t, cfile, 0))
		cancel()
		if err := ts.stop(t); err != nil {
			t.Fatal(err)
		}
		if err == nil {
			t.Fatal("the client's session succeeded with a refused key")
		}
		if !strings.Contains(err.Error(), "the server ended the session") || !strings.Contains(err.Error(), "coefficient out of range") {
			t.Fatalf("run %d: the client got %q, want the server's reason (the key's coefficient out of range)\nserver log:\n%s", i, err, ts.log.String())
		}
		if !strings.Contains(ts.log.String(), "coefficient out of range") {
			t.Errorf("the server's log does not give the reason:\n%s", ts.log.String())
		}
	}
}
