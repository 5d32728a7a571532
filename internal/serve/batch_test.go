package serve

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/serve/servetest"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
)

// runTraffic is a report's traffic over its layers (the program runs, without the handshake,
// the set-up and the final acknowledgement).
func runTraffic(rep *Report) Traffic {
	var t Traffic
	for _, l := range rep.Layers {
		t = t.add(l.Traffic)
	}
	return t
}

// TestBatchSession: a batch of N inferences in one session gives each inference's outputs
// bitwise equal to its clear run, pays the handshake and the set-up once (the same bytes as a
// single session), and each inference costs exactly the bytes of a single session's run.
func TestBatchSession(t *testing.T) {
	full, client, _, _ := mnistSmall(t)
	base := countGoroutines()
	single, ssingle, err := RunLocal(context.Background(), options(full), options(client), input(t, full, 0))
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	var batch [][]ring.Tensor
	for i := range n {
		batch = append(batch, input(t, full, i))
	}
	var progress []int
	copt := options(client)
	instrs := len(client.Program.Instrs)
	copt.Progress = func(done, total int, in *fixed.Instr) {
		if total != n*instrs || in != client.Program.Instrs[(done-1)%instrs] {
			t.Errorf("progress %d/%d for %v", done, total, in.Op)
		}
		progress = append(progress, done)
	}
	cres, sres, err := RunLocalBatch(context.Background(), options(full), copt, batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(cres.Batch) != n || len(sres.Batch) != n {
		t.Fatalf("%d and %d inferences' outputs, want %d", len(cres.Batch), len(sres.Batch), n)
	}
	for k := range n {
		want := clearRun(t, full, batch[k])
		for i, o := range cres.Batch[k] {
			if !o.Revealed || !slices.Equal(o.Value.Data, want[i]) {
				t.Fatalf("inference %d output %d = %v, clear %v", k, i, o.Value.Data, want[i])
			}
		}
		for _, o := range sres.Batch[k] {
			if o.Revealed {
				t.Errorf("the server learnt output %s", o.Name)
			}
		}
	}
	if len(progress) != n*instrs || progress[len(progress)-1] != n*instrs {
		t.Errorf("%d progress calls, the last %v", len(progress), progress[len(progress)-1:])
	}
	for _, pair := range [][2]*Report{{single.Report, cres.Report}, {ssingle.Report, sres.Report}} {
		one, b := pair[0], pair[1]
		if b.Inferences != n || one.Inferences != 1 || len(b.Each) != n || len(one.Each) != 0 {
			t.Fatalf("party %d: inferences %d (each %d), single %d (each %d)", b.Party, b.Inferences, len(b.Each), one.Inferences, len(one.Each))
		}
		if b.Handshake.BytesSent != one.Handshake.BytesSent || b.Handshake.BytesRecv != one.Handshake.BytesRecv || b.Setup != one.Setup {
			t.Errorf("party %d: batch handshake %+v set-up %+v, single session %+v %+v", b.Party, b.Handshake, b.Setup, one.Handshake, one.Setup)
		}
		per := runTraffic(one)
		if got := runTraffic(b); got.BytesSent != n*per.BytesSent || got.BytesRecv != n*per.BytesRecv {
			t.Errorf("party %d: the layers of the batch carry %+v, want %d × %+v", b.Party, got, n, per)
		}
		for k, e := range b.Each {
			if e.Index != k || e.BytesSent != per.BytesSent || e.BytesRecv != per.BytesRecv {
				t.Errorf("party %d inference %d: %+v, want the bytes of %+v", b.Party, k, e, per)
			}
		}
		if b.PerInference == nil || b.InferencesPerSec <= 0 || b.PerInferenceMS <= 0 {
			t.Errorf("party %d: summary %+v %v %v", b.Party, b.PerInference, b.InferencesPerSec, b.PerInferenceMS)
		}
		// Everything else is the client's final acknowledgement.
		rest := b.Total.BytesSent + b.Total.BytesRecv - b.Handshake.BytesSent - b.Handshake.BytesRecv -
			b.Setup.BytesSent - b.Setup.BytesRecv - sumEach(b.Each).BytesSent - sumEach(b.Each).BytesRecv
		if rest != int64(transport.HeaderSize+len(doneMessage)) {
			t.Errorf("party %d: %d bytes outside the handshake, set-up and inferences, want the acknowledgement's %d", b.Party, rest, transport.HeaderSize+len(doneMessage))
		}
	}
	testenv.CheckNoLeaks(t, base)
}

func sumEach(es []Inference) Traffic {
	var t Traffic
	for _, e := range es {
		t = t.add(e.Traffic)
	}
	return t
}

// TestBatchLimits: the server refuses a batch above its MaxBatch at the handshake, naming the
// limit at both sides; the session bound applies to each inference, so a batch longer in all
// than SessionTimeout completes, while one inference running over it ends the session with an
// error naming that inference.
func TestBatchLimits(t *testing.T) {
	full, client, _, _ := mnistSmall(t)
	in := input(t, full, 1)
	batch := [][]ring.Tensor{in, in, in, in}

	sopt := options(full)
	sopt.MaxBatch = 3
	cres, sres, err := RunLocalBatch(context.Background(), sopt, options(client), batch)
	want := "the client asks for 4 inferences in one session, the server allows at most 3 (its --max-batch): split the batch"
	if !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), want) {
		t.Errorf("over the cap: %v", err)
	}
	if cres == nil || sres == nil || !strings.Contains(sres.Report.Error, want) {
		t.Errorf("over the cap: the server's report %+v", sres)
	}
	if _, _, err := RunLocalBatch(context.Background(), options(full), options(client), nil); err == nil || !strings.Contains(err.Error(), "at least one inference") {
		t.Errorf("empty batch: %v", err)
	}

	// Count the backend calls of one inference, then slow the server's down so that each
	// inference takes about limit/3: the batch of 4 runs 4/3 of the limit in all.
	var calls atomic.Int64
	count := options(full)
	count.NewBackend = servetest.Func(func(_ *transport.Conn, party, call int) error {
		calls.Store(int64(call))
		return nil
	})
	if _, _, err := RunLocal(context.Background(), count, options(client), in); err != nil {
		t.Fatal(err)
	}
	perInference := int(calls.Load())
	if perInference < 2 {
		t.Fatalf("%d backend calls per inference", perInference)
	}
	const limit = 1200 * time.Millisecond
	slow := func(stall int) *Options {
		o := options(full)
		o.SessionTimeout = limit
		o.NewBackend = servetest.Func(func(_ *transport.Conn, party, call int) error {
			time.Sleep(limit / 3 / time.Duration(perInference))
			if call == stall {
				time.Sleep(limit + limit/2)
			}
			return nil
		})
		return o
	}
	copt := options(client)
	copt.Timeout = 10 * time.Second
	start := time.Now()
	if _, _, err := RunLocalBatch(context.Background(), slow(-1), copt, batch); err != nil {
		t.Fatalf("a batch of inferences each within the limit: %v", err)
	}
	if d := time.Since(start); d < limit {
		t.Logf("the batch took %v, less than the limit %v: the test did not exercise the per-inference bound", d, limit)
	}
	// The third inference stalls (calls are counted from 1 over the session).
	_, sres, err = RunLocalBatch(context.Background(), slow(2*perInference+perInference/2), copt, batch)
	want = fmt.Sprintf("(%v for each inference; inference 3 of 4 ran over)", limit)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a stalled inference: client %v, want %q", err, want)
	}
	if sres == nil || !strings.Contains(sres.Report.Error, want) || len(sres.Report.Each) != 3 {
		t.Errorf("a stalled inference: server report %+v", sres.Report)
	}
}

// TestServeBatchAndSingle: a Server runs a batch client and single clients at the same time,
// all bitwise right.
func TestServeBatchAndSingle(t *testing.T) {
	full, cfile, _, _ := mnistSmall(t)
	base := countGoroutines()
	ts := startServer(t, &Server{Options: options(full), MaxSessions: 2})
	var batch [][]ring.Tensor
	for i := range 6 {
		batch = append(batch, input(t, full, i))
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	wg.Add(3)
	go func() {
		defer wg.Done()
		nc, err := Dial(context.Background(), ts.addr, nil, 2*time.Second)
		if err != nil {
			errs[0] = err
			return
		}
		res, err := RunBatch(context.Background(), nc, 1, options(cfile), batch)
		if err != nil {
			errs[0] = err
			return
		}
		for k, outs := range res.Batch {
			if want := clearRun(t, full, batch[k]); !slices.Equal(outs[0].Value.Data, want[0]) {
				errs[0] = fmt.Errorf("batch inference %d: %v, clear %v", k, outs[0].Value.Data, want[0])
			}
		}
	}()
	for i := 1; i < 3; i++ {
		go func() {
			defer wg.Done()
			in := input(t, full, 6+i-1)
			res, err := client(context.Background(), ts.addr, options(cfile), nil, in)
			if err != nil {
				errs[i] = err
				return
			}
			if want := clearRun(t, full, in); !slices.Equal(res.Outputs[0].Value.Data, want[0]) {
				errs[i] = fmt.Errorf("single client %d: %v, clear %v", i, res.Outputs[0].Value.Data, want[0])
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("client %d: %v", i, err)
		}
	}
	if err := ts.stop(t); err != nil {
		t.Fatal(err)
	}
	ts.mu.Lock()
	var counts []int
	for _, r := range ts.reports {
		counts = append(counts, r.Inferences)
	}
	ts.mu.Unlock()
	slices.Sort(counts)
	if !slices.Equal(counts, []int{1, 1, 6}) {
		t.Errorf("the server's reports count %v inferences, want 1, 1 and 6", counts)
	}
	if n := strings.Count(ts.log.String(), "inferences=6"); n != 1 {
		t.Errorf("log:\n%s", ts.log.String())
	}
	testenv.CheckNoLeaks(t, base)
}

// TestOldVersionClient: a version-2 client (its hello has no batch field) gets the version
// message from a version-3 server, not a complaint about its body.
func TestOldVersionClient(t *testing.T) {
	old := testHello(1).marshal()
	// Rewrite it as version 2 wrote it: version 2 in the prefix, the body without the batch u32.
	binary.LittleEndian.PutUint16(old[6:], 2)
	body := append(slices.Clone(old[prefixSize:prefixSize+43]), old[prefixSize+47:]...)
	binary.LittleEndian.PutUint16(old[10:], uint16(len(body)))
	old = append(old[:prefixSize], body...)
	var got []byte
	addr, wait := rawPeer(t, func(nc net.Conn) {
		nc.Write(old)
		got, _ = io.ReadAll(nc)
	})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = Handshake(context.Background(), nc, testHello(0), 500*time.Millisecond)
	nc.Close()
	wait()
	want := fmt.Sprintf("client speaks scirun handshake version 2, server version %d: run the same scirun release on both sides", HandshakeVersion)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("server: %v, want %q", err, want)
	}
	if !strings.Contains(string(got), want) {
		t.Errorf("the old client read %q, want the reason %q", got, want)
	}
}
