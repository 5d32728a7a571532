package transport

import (
	"sync"
	"time"

	"github.com/cryptflow-go/cryptflow/netmodel"
)

// Link is the receive side of an emulated link, shared by the Conns given
// it in [Options.Link]: each incoming frame occupies the link for its size
// divided by the bandwidth, after the frames that came before it on any of
// those Conns, and is delivered RTT/2 after it has crossed. Safe for
// concurrent use.
type Link struct {
	m    netmodel.Model
	mu   sync.Mutex
	free time.Time // when the link has carried every frame so far
}

// NewLink returns an idle link with model m.
func NewLink(m netmodel.Model) *Link { return &Link{m: m} }

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
