package transport

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/netmodel"
)

// TestSharedLink checks that connections given one Link share its
// bandwidth: 1 MB on each of two connections over a 10 MB/s link needs at
// least 200 ms, where links of their own carry both in about 100 ms.
func TestSharedLink(t *testing.T) {
	const n = 1_000_000
	run := func(shared bool) time.Duration {
		m := netmodel.Model{Bandwidth: 10e6}
		link := NewLink(m)
		ctx := context.Background()
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		start := time.Now()
		for range 2 {
			na, nb := net.Pipe()
			ropt := Options{Timeout: 5 * time.Second, Link: link}
			if !shared {
				ropt = Options{Timeout: 5 * time.Second, Net: &m}
			}
			send, recv := NewConn(na, Options{Timeout: 5 * time.Second}), NewConn(nb, ropt)
			t.Cleanup(func() { send.Close(); recv.Close() })
			wg.Add(2)
			go func() {
				defer wg.Done()
				if err := send.Send(ctx, make([]byte, n)); err != nil {
					errs <- err
					return
				}
				errs <- send.Flush(ctx)
			}()
			go func() { defer wg.Done(); errs <- recv.Recv(ctx, make([]byte, n)) }()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		return time.Since(start)
	}
	if d := run(true); d < 200*time.Millisecond {
		t.Errorf("2 MB over one shared 10 MB/s link arrived after %v < 200 ms", d)
	}
	if d := run(false); d < 100*time.Millisecond {
		t.Errorf("1 MB over each of two 10 MB/s links arrived after %v < 100 ms", d)
	}
}
