package transport

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The yield hook runs exactly at receives that follow a send since it last
// ran, its error fails the receive untouched, and with a hook installed the
// flights end only where EndFlight says.
func TestYieldHook(t *testing.T) {
	a, b := pipe(t, Options{Timeout: 5 * time.Second})
	ctx := context.Background()
	for range 4 {
		if err := b.Send(ctx, []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var calls int
	var fail error
	a.SetYield(func() error { calls++; return fail })
	buf := make([]byte, 1)
	recv := func() error { return a.Recv(ctx, buf) }
	// A receive that continues an incoming flight: no yield.
	if err := recv(); err != nil || calls != 0 {
		t.Fatalf("first receive: err %v, %d yields", err, calls)
	}
	if err := a.Send(ctx, []byte{2}); err != nil {
		t.Fatal(err)
	}
	// Receive after a send: one yield, then none until the next send.
	if err := recv(); err != nil || calls != 1 {
		t.Fatalf("receive after a send: err %v, %d yields", err, calls)
	}
	if err := recv(); err != nil || calls != 1 {
		t.Fatalf("second receive: err %v, %d yields", err, calls)
	}
	// A failing hook fails the receive before it reads anything.
	fail = errors.New("stop")
	if err := a.Send(ctx, []byte{3}); err != nil {
		t.Fatal(err)
	}
	if err := recv(); !errors.Is(err, fail) || calls != 2 {
		t.Fatalf("failing hook: err %v, %d yields", err, calls)
	}
	fail = nil
	if err := recv(); err != nil {
		t.Fatalf("the frame the failed receive left: %v", err)
	}
	// SetYield forgets earlier sends; the sends above were one flight,
	// since no EndFlight came between them.
	if err := a.Send(ctx, []byte{3}); err != nil {
		t.Fatal(err)
	}
	if !a.WouldYield() {
		t.Fatal("WouldYield false after a send with a hook installed")
	}
	a.SetYield(func() error { calls++; return nil })
	if a.WouldYield() {
		t.Fatal("SetYield did not forget the sends before it")
	}
	if err := a.Send(ctx, []byte{4}); err != nil {
		t.Fatal(err)
	}
	if got := a.Stats().Rounds; got != 1 {
		t.Fatalf("%d flights with the hook installed, want 1", got)
	}

	a.EndFlight()
	if err := a.Send(ctx, []byte{5}); err != nil {
		t.Fatal(err)
	}
	if got := a.Stats().Rounds; got != 2 {
		t.Fatalf("%d flights after EndFlight, want 2", got)
	}
	// Without a hook, receives end flights again.
	a.SetYield(nil)
	if err := b.Send(ctx, []byte{6}); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := recv(); err != nil {
		t.Fatal(err)
	}
	if err := a.Send(ctx, []byte{7}); err != nil {
		t.Fatal(err)
	}
	if got := a.Stats().Rounds; got != 3 {
		t.Fatalf("%d flights after the hook was removed, want 3", got)
	}
}
