package netmodel

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want *Model
		spec string
	}{
		{"", nil, ""},
		{"none", nil, ""},
		{"LAN", &Model{RTT: 300 * time.Microsecond, Bandwidth: 377e6}, "lan"},
		{"wan", &Model{RTT: 80 * time.Millisecond, Bandwidth: 40e6}, "wan"},
		{"1Gbit/s,0.5ms", &Model{RTT: 500 * time.Microsecond, Bandwidth: 125e6}, "125MB/s,500µs"},
		{"100Mbps, 40ms", &Model{RTT: 40 * time.Millisecond, Bandwidth: 12.5e6}, "12.5MB/s,40ms"},
		{"125MB/s", &Model{Bandwidth: 125e6}, "125MB/s,0s"},
		{"3Gbit", &Model{Bandwidth: 375e6}, "375MB/s,0s"},
		{"2.5GB/s,1us", &Model{RTT: time.Microsecond, Bandwidth: 2.5e9}, "2500MB/s,1µs"},
		{"800kbit/s,200ms", &Model{RTT: 200 * time.Millisecond, Bandwidth: 1e5}, "0.1MB/s,200ms"},
	} {
		got, err := Parse(c.in)
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
		back, err := Parse(got.Spec())
		if err != nil || *back != *got {
			t.Errorf("%q: spec %q reads back as %+v, %v", c.in, got.Spec(), back, err)
		}
	}
	for _, bad := range []string{"fast", "1G", "1Gbit/s,", "0MB/s", "-5MB/s", "NaNMB/s", "InfMB/s",
		"10MB/s,soon", "10MB/s,-1ms", "MB/s", "1e400MB/s"} {
		if m, err := Parse(bad); err == nil {
			t.Errorf("%q accepted as %+v", bad, m)
		} else if !strings.Contains(err.Error(), "link") {
			t.Errorf("%q: error %q does not say what it read", bad, err)
		}
	}
}
