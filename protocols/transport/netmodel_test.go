package transport

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseNet(t *testing.T) {
	for _, c := range []struct {
		in   string
		want *NetModel
		spec string
	}{
		{"", nil, ""},
		{"none", nil, ""},
		{"LAN", &NetModel{RTT: 300 * time.Microsecond, Bandwidth: 377e6}, "lan"},
		{"wan", &NetModel{RTT: 80 * time.Millisecond, Bandwidth: 40e6}, "wan"},
		{"1Gbit/s,0.5ms", &NetModel{RTT: 500 * time.Microsecond, Bandwidth: 125e6}, "125MB/s,500µs"},
		{"100Mbps, 40ms", &NetModel{RTT: 40 * time.Millisecond, Bandwidth: 12.5e6}, "12.5MB/s,40ms"},
		{"125MB/s", &NetModel{Bandwidth: 125e6}, "125MB/s,0s"},
		{"3Gbit", &NetModel{Bandwidth: 375e6}, "375MB/s,0s"},
		{"2.5GB/s,1us", &NetModel{RTT: time.Microsecond, Bandwidth: 2.5e9}, "2500MB/s,1µs"},
		{"800kbit/s,200ms", &NetModel{RTT: 200 * time.Millisecond, Bandwidth: 1e5}, "0.1MB/s,200ms"},
	} {
		got, err := ParseNet(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("%q: %+v, want %+v", c.in, got, c.want)
			continue
		}
		if got == nil {
			continue
		}
		if s := got.Spec(); s != c.spec {
			t.Errorf("%q: spec %q, want %q", c.in, s, c.spec)
		}
		back, err := ParseNet(got.Spec())
		if err != nil || *back != *got {
			t.Errorf("%q: spec %q reads back as %+v, %v", c.in, got.Spec(), back, err)
		}
	}
	for _, bad := range []string{"fast", "1G", "1Gbit/s,", "0MB/s", "-5MB/s", "NaNMB/s", "InfMB/s",
		"10MB/s,soon", "10MB/s,-1ms", "MB/s", "1e400MB/s"} {
		if m, err := ParseNet(bad); err == nil {
			t.Errorf("%q accepted as %+v", bad, m)
		} else if !strings.Contains(err.Error(), "link") {
			t.Errorf("%q: error %q does not say what it read", bad, err)
		}
	}
}

// TestSharedLink checks that connections given one Link share its
// bandwidth: 1 MB on each of two connections over a 10 MB/s link needs at
// least 200 ms, where links of their own carry both in about 100 ms.
func TestSharedLink(t *testing.T) {
	const n = 1_000_000
	run := func(shared bool) time.Duration {
		m := NetModel{Bandwidth: 10e6}
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
