// Package netmodel describes a network link by its bandwidth and round-trip time: the CrypTFlow2
// LAN and WAN settings, any BANDWIDTH[,RTT] read from a flag, and its canonical spelling. The
// compiler plans linear layers for a link (passes), the program file records it (sciir) and the
// transport emulates it (transport.Link); this package is the leaf they share.
package netmodel

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Model describes a link: its round-trip time and its bandwidth per direction.
type Model struct {
	RTT       time.Duration // round-trip time; each frame is delayed by RTT/2
	Bandwidth float64       // bytes per second in each direction; 0 means unlimited
}

// LAN is the LAN setting of the CrypTFlow2 evaluation: 377 MB/s, 0.3 ms RTT.
func LAN() Model { return Model{RTT: 300 * time.Microsecond, Bandwidth: 377e6} }

// WAN is the WAN setting of the CrypTFlow2 evaluation: 40 MB/s, 80 ms RTT.
func WAN() Model { return Model{RTT: 80 * time.Millisecond, Bandwidth: 40e6} }

// Help describes the link syntax of [Parse] for command-line help.
const Help = "lan (377 MB/s, 0.3 ms RTT), wan (40 MB/s, 80 ms RTT) or BANDWIDTH[,RTT] " +
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

// Parse reads a link description: "" or "none" (no emulation: nil), "lan"
// or "wan" (the CrypTFlow2 settings, [LAN] and [WAN]), or "BANDWIDTH[,RTT]":
// a positive number with a unit of bits or bytes per second (per direction)
// and an optional round-trip time in Go's duration syntax (default 0), e.g.
// "1Gbit/s,0.5ms" or "125MB/s,2ms". The names are case-insensitive.
func Parse(s string) (*Model, error) {
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
	var m Model
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

// Spec is m's canonical description, which [Parse] reads back to m:
// "lan" and "wan" for those settings, else BANDWIDTH,RTT with the
// bandwidth in MB/s (e.g. "125MB/s,500µs").
func (m Model) Spec() string {
	switch m {
	case LAN():
		return "lan"
	case WAN():
		return "wan"
	}
	return strconv.FormatFloat(m.Bandwidth/1e6, 'f', -1, 64) + "MB/s," + m.RTT.String()
}
