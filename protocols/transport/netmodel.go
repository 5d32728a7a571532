package transport

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// NetModel describes an emulated link.
type NetModel struct {
	RTT       time.Duration // round-trip time; each frame is delayed by RTT/2
	Bandwidth float64       // bytes per second in each direction; 0 means unlimited
}

// LAN is the LAN setting of the CrypTFlow2 evaluation: 377 MB/s, 0.3 ms RTT.
func LAN() NetModel { return NetModel{RTT: 300 * time.Microsecond, Bandwidth: 377e6} }

// WAN is the WAN setting of the CrypTFlow2 evaluation: 40 MB/s, 80 ms RTT.
func WAN() NetModel { return NetModel{RTT: 80 * time.Millisecond, Bandwidth: 40e6} }

// NetHelp describes the link syntax of [ParseNet] for command-line help.
const NetHelp = "lan (377 MB/s, 0.3 ms RTT), wan (40 MB/s, 80 ms RTT) or BANDWIDTH[,RTT] " +
	"such as 1Gbit/s,0.5ms or 125MB/s,2ms (units bit/s, kbit/s, Mbit/s, Gbit/s, B/s, kB/s, MB/s, GB/s; " +
	"bandwidth per direction)"

// bandwidth units in bytes per second, longest suffixes first within a
// family so that "Mbit/s" is not read as "bit/s" with a stray "M".
var bwUnits = []struct {
	suffix string
	mult   float64
}{
	{"Gbit/s", 1e9 / 8}, {"Mbit/s", 1e6 / 8}, {"kbit/s", 1e3 / 8}, {"bit/s", 1.0 / 8},
	{"Gbps", 1e9 / 8}, {"Mbps", 1e6 / 8}, {"kbps", 1e3 / 8},
	{"Gbit", 1e9 / 8}, {"Mbit", 1e6 / 8}, {"kbit", 1e3 / 8},
	{"GB/s", 1e9}, {"MB/s", 1e6}, {"kB/s", 1e3}, {"KB/s", 1e3}, {"B/s", 1},
}

// ParseNet reads a link description: "" or "none" (no emulation: nil), "lan"
// or "wan" (the CrypTFlow2 settings, [LAN] and [WAN]), or "BANDWIDTH[,RTT]":
// a positive number with a unit of bits or bytes per second (per direction)
// and an optional round-trip time in Go's duration syntax (default 0), e.g.
// "1Gbit/s,0.5ms" or "125MB/s,2ms". The names are case-insensitive.
func ParseNet(s string) (*NetModel, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "", "none":
		return nil, nil
	case "lan":
		m := LAN()
		return &m, nil
	case "wan":
		m := WAN()
		return &m, nil
	}
	bw, rtt, hasRTT := strings.Cut(s, ",")
	bw = strings.TrimSpace(bw)
	var m NetModel
	unit := -1
	for i, u := range bwUnits {
		if strings.HasSuffix(bw, u.suffix) {
			unit = i
			break
		}
	}
	if unit < 0 {
		return nil, fmt.Errorf("link %q: want lan, wan or BANDWIDTH[,RTT] with a unit (e.g. 1Gbit/s,0.5ms or 125MB/s)", s)
	}
	num := strings.TrimSpace(strings.TrimSuffix(bw, bwUnits[unit].suffix))
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return nil, fmt.Errorf("link %q: bandwidth %q is not a positive number", s, num)
	}
	m.Bandwidth = v * bwUnits[unit].mult
	if hasRTT {
		d, err := time.ParseDuration(strings.TrimSpace(rtt))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("link %q: round-trip time %q: want a duration such as 0.5ms or 40ms", s, strings.TrimSpace(rtt))
		}
		m.RTT = d
	}
	return &m, nil
}

// Spec is m's canonical description, which [ParseNet] reads back to m:
// "lan" and "wan" for those settings, else BANDWIDTH,RTT with the
// bandwidth in MB/s (e.g. "125MB/s,500µs").
func (m NetModel) Spec() string {
	switch m {
	case LAN():
		return "lan"
	case WAN():
		return "wan"
	}
	return strconv.FormatFloat(m.Bandwidth/1e6, 'f', -1, 64) + "MB/s," + m.RTT.String()
}

// Link is the receive side of an emulated link, shared by the Conns given
// it in [Options.Link]: each incoming frame occupies the link for its size
// divided by the bandwidth, after the frames that came before it on any of
// those Conns, and is delivered RTT/2 after it has crossed. Safe for
// concurrent use.
type Link struct {
	m    NetModel
	mu   sync.Mutex
	free time.Time // when the link has carried every frame so far
}

// NewLink returns an idle link with model m.
func NewLink(m NetModel) *Link { return &Link{m: m} }

// arrival books an n-byte frame that has just been read and returns when
// it is to be delivered.
func (l *Link) arrival(n int) time.Time {
	now := time.Now()
	l.mu.Lock()
	start := now
	if l.free.After(now) {
		start = l.free
	}
	if l.m.Bandwidth > 0 {
		start = start.Add(time.Duration(float64(n) / l.m.Bandwidth * float64(time.Second)))
	}
	l.free = start
	l.mu.Unlock()
	return start.Add(l.m.RTT / 2)
}
