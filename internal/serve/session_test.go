package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/serve/servetest"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
)

func TestLocalBitwiseAndReport(t *testing.T) {
	full, client, _, _ := mnistSmall(t)
	base := countGoroutines()
	var progress []int
	copt := options(client)
	copt.Progress = func(done, total int, in *fixed.Instr) {
		if total != len(client.Program.Instrs) || in != client.Program.Instrs[done-1] {
			t.Errorf("progress %d/%d for %v", done, total, in.Op)
		}
		progress = append(progress, done)
	}
	for i := range 3 {
		in := input(t, full, i)
		progress = progress[:0]
		cres, sres, err := RunLocal(context.Background(), options(full), copt, in)
		if err != nil {
			t.Fatal(err)
		}
		checkOutputs(t, "local run", cres, clearRun(t, full, in))
		for _, o := range sres.Outputs {
			if o.Revealed {
				t.Errorf("the server learnt output %s", o.Name)
			}
		}
		if len(progress) != len(client.Program.Instrs) || progress[len(progress)-1] != len(progress) {
			t.Errorf("progress calls %v", progress)
		}
		// The reports: one layer per instruction; traffic adds up; the two sides mirror.
		for _, rep := range []*Report{cres.Report, sres.Report} {
			if len(rep.Layers) != len(full.Program.Instrs) || rep.Error != "" {
				t.Fatalf("report: %d layers, error %q", len(rep.Layers), rep.Error)
			}
			sum := rep.Handshake.add(rep.Setup)
			for _, l := range rep.Layers {
				sum = sum.add(l.Traffic)
			}
			if fin := rep.Total.BytesSent + rep.Total.BytesRecv - sum.BytesSent - sum.BytesRecv; fin != int64(transport.HeaderSize+len(doneMessage)) {
				t.Errorf("party %d: total %+v, layers+setup+handshake %+v: %d bytes unaccounted", rep.Party, rep.Total, sum, fin)
			}
		}
		c, s := cres.Report, sres.Report
		if c.Total.BytesSent != s.Total.BytesRecv || c.Total.BytesRecv != s.Total.BytesSent {
			t.Errorf("client %+v and server %+v totals do not mirror", c.Total, s.Total)
		}
		for j, l := range c.Layers {
			sl := s.Layers[j]
			if l.BytesSent != sl.BytesRecv || l.BytesRecv != sl.BytesSent {
				t.Errorf("layer %d (%s): client %+v, server %+v", j, l.Op, l.Traffic, sl.Traffic)
			}
			// The insecure backend sends exactly the operand shares: check one formula.
			if l.Op == "relu" {
				n := int64(ir.Shape(l.Shape).Size())
				if l.BytesSent != 8*n+transport.HeaderSize || l.BytesRecv != l.BytesSent {
					t.Errorf("relu %v: sent %d bytes, received %d, want %d each way", l.Shape, l.BytesSent, l.BytesRecv, 8*n+4)
				}
			}
			if l.Op == "reshape" && (l.BytesSent != 0 || l.BytesRecv != 0) {
				t.Errorf("local reshape has traffic %+v", l.Traffic)
			}
		}
		if c.ProgramID != full.IDString() || c.Role != "client" || s.Role != "server" || !strings.HasPrefix(c.Peer, "127.0.0.1:") {
			t.Errorf("report header %+v", c)
		}
	}
	// The table and the JSON.
	cres, _, err := RunLocal(context.Background(), options(full), options(client), input(t, full, 0))
	if err != nil {
		t.Fatal(err)
	}
	var tab bytes.Buffer
	if err := cres.Report.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(tab.String()), "\n")
	if len(lines) != 1+1+2+len(full.Program.Instrs)+1 || !strings.Contains(lines[len(lines)-1], "total") {
		t.Errorf("table:\n%s", tab.String())
	}
	var js bytes.Buffer
	if err := cres.Report.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("JSON: %v\n%s", err, js.String())
	}
	back.Started = cres.Report.Started // monotonic clock reading is not serialised
	if !reflect.DeepEqual(&back, cres.Report) {
		t.Errorf("JSON round trip:\n%+v\n%+v", back, *cres.Report)
	}
	if n := strings.Count(js.String(), "\n    {\"index\":"); n != len(back.Layers) {
		t.Errorf("JSON has %d lines, want one per layer:\n%s", n, js.String())
	}
	testenv.CheckNoLeaks(t, base)
}

func TestLocalMismatchAndChecks(t *testing.T) {
	full, client, full8, client8 := mnistSmall(t)
	in := input(t, full, 0)
	// Different scale: refused on both sides with the same message.
	cres, sres, err := RunLocal(context.Background(), options(full), options(client8), in)
	want := "client runs program " + client8.IDString()[:8] + "…, server runs " + full.IDString()[:8] + "… (different ring or scale: client Z_2^32 scale 8, server Z_2^32 scale 12): recompile or fetch the matching client file"
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrHandshake) {
		t.Fatalf("client: %v\nwant %q", err, want)
	}
	if sres == nil || !strings.Contains(sres.Report.Error, want) {
		t.Errorf("server: %+v", sres)
	}
	if cres == nil || cres.Report.Error == "" || len(cres.Report.Layers) != 0 {
		t.Errorf("client report %+v", cres)
	}
	// Different backends.
	other := options(client)
	other.Backend = "other"
	if _, _, err := RunLocal(context.Background(), options(full), other, in); err == nil || !strings.Contains(err.Error(), `client runs backend "other", server "insecure-test"`) {
		t.Errorf("backend mismatch: %v", err)
	}
	// Party 0 with the client copy fails before any network activity.
	if _, _, err := RunLocal(context.Background(), options(client), options(client), in); !errors.Is(err, vm.ErrNoWeights) {
		t.Errorf("server with the client copy: %v", err)
	}
	// No backend constructor.
	nob := options(client)
	nob.NewBackend = nil
	if _, _, err := RunLocal(context.Background(), options(full), nob, in); err == nil || !strings.Contains(err.Error(), `backend "insecure-test" is not available`) {
		t.Errorf("no backend: %v", err)
	}
	// Wrong number of inputs.
	if _, _, err := RunLocal(context.Background(), options(full), options(client), nil); err == nil || !strings.Contains(err.Error(), "0 inputs given") {
		t.Errorf("no inputs: %v", err)
	}
	_ = full8
}

func TestLocalFailures(t *testing.T) {
	full, client, _, _ := mnistSmall(t)
	in := input(t, full, 0)
	base := countGoroutines()
	// The server's backend fails in the middle: the client learns why at once (abort), without
	// waiting for its timeout.
	sopt := options(full)
	sopt.NewBackend = servetest.Func(func(_ *transport.Conn, _, call int) error {
		if call == 5 {
			return errors.New("injected server failure")
		}
		return nil
	})
	copt := options(client)
	copt.Timeout = time.Minute
	start := time.Now()
	_, _, err := RunLocal(context.Background(), sopt, copt, in)
	if err == nil || !strings.Contains(err.Error(), "the server ended the session") || !strings.Contains(err.Error(), "injected server failure") {
		t.Errorf("server failure: %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("the client waited %v", time.Since(start))
	}
	// The client disconnects mid-run: the server reports it.
	copt = options(client)
	copt.NewBackend = servetest.Func(func(conn *transport.Conn, _, call int) error {
		if call == 4 {
			conn.Close()
			return errors.New("client killed")
		}
		return nil
	})
	_, sres, err := RunLocal(context.Background(), options(full), copt, in)
	if err == nil || !strings.Contains(err.Error(), "client killed") {
		t.Errorf("client failure: %v", err)
	}
	if sres == nil || !strings.Contains(sres.Report.Error, "the client disconnected") {
		t.Errorf("server after the client disconnected: %+v", sres.Report)
	}
	// Cancelling the context ends both sides promptly.
	ctx, cancel := context.WithCancel(context.Background())
	copt = options(client)
	copt.NewBackend = servetest.Func(func(_ *transport.Conn, _, call int) error {
		if call == 3 {
			cancel()
		}
		return nil
	})
	if _, _, err := RunLocal(ctx, options(full), copt, in); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	testenv.CheckNoLeaks(t, base)
}

// TestNativeConvPassesThrough: a backend with its own convolution (vm.ConvBackend) gets the
// convolutions through the session's accounting wrapper, and the result is still bitwise right.
func TestNativeConvPassesThrough(t *testing.T) {
	full, client, _, _ := mnistSmall(t)
	var (
		mu    sync.Mutex
		convs []*servetest.InsecureConv
	)
	newConv := servetest.FuncConv(nil)
	record := func(ctx context.Context, conn *transport.Conn, streams []*transport.Conn, party int, r ring.Ring) (vm.Backend, error) {
		b, err := newConv(ctx, conn, streams, party, r)
		if err == nil {
			mu.Lock()
			convs = append(convs, b.(*servetest.InsecureConv))
			mu.Unlock()
		}
		return b, err
	}
	sopt, copt := options(full), options(client)
	sopt.NewBackend, copt.NewBackend = record, record
	in := input(t, full, 4)
	cres, _, err := RunLocal(context.Background(), sopt, copt, in)
	if err != nil {
		t.Fatal(err)
	}
	checkOutputs(t, "native conv", cres, clearRun(t, full, in))
	nconv := 0
	for _, in := range full.Program.Instrs {
		if in.Op == fixed.OpConv {
			nconv++
		}
	}
	if len(convs) != 2 || convs[0].Convs != nconv || convs[1].Convs != nconv || nconv == 0 {
		t.Errorf("Conv2D calls: %d backends, want 2 with %d calls each", len(convs), nconv)
	}
	for _, l := range cres.Report.Layers {
		if l.Op == "conv" && l.BytesSent == 0 {
			t.Errorf("conv layer %d has no traffic in the report", l.Index)
		}
	}
}
