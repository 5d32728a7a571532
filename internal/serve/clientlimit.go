package serve

import (
	"fmt"
	"sync"
	"time"
)

// clientLimits enforces the per-client limits of a Server, keyed by ClientIdentity: at most
// perClient sessions running or waiting for a slot at once, and at most perMinute sessions
// admitted in any minute (0: no limit). It is safe for concurrent use, and holds state only for
// clients with a session or an admission in the last minute.
type clientLimits struct {
	perClient, perMinute int
	window               time.Duration
	now                  func() time.Time

	mu     sync.Mutex
	active map[string]int
	recent map[string][]time.Time // admissions in the last window, oldest first
}

func newClientLimits(perClient, perMinute int) *clientLimits {
	return &clientLimits{perClient: perClient, perMinute: perMinute, window: time.Minute, now: time.Now,
		active: map[string]int{}, recent: map[string][]time.Time{}}
}

// admit counts a new session of client id, or returns why it is refused (and the metrics reason).
// An empty reason means admitted; the caller must call release(id) when the session ends.
func (l *clientLimits) admit(id string) (reason, kind string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.perClient > 0 && l.active[id] >= l.perClient {
		return fmt.Sprintf("this client (%s) already has %d sessions running or waiting, the server's limit per client: try again when one ends",
			id, l.active[id]), "client_limit"
	}
	if l.perMinute > 0 {
		r := l.recent[id]
		for len(r) > 0 && now.Sub(r[0]) >= l.window {
			r = r[1:]
		}
		if len(r) >= l.perMinute {
			l.recent[id] = r
			wait := r[0].Add(l.window).Sub(now).Round(time.Second)
			return fmt.Sprintf("rate limit: this client (%s) started %d sessions in the last minute, the server allows %d per minute: try again in %v",
				id, len(r), l.perMinute, max(wait, time.Second)), "rate_limit"
		}
		l.recent[id] = append(r, now)
	}
	l.active[id]++
	l.prune(now)
	return "", ""
}

// release ends a session admitted for id.
func (l *clientLimits) release(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active[id]--; l.active[id] <= 0 {
		delete(l.active, id)
	}
}

// prune drops the admissions older than the window, at most a few clients per call.
func (l *clientLimits) prune(now time.Time) {
	n := 0
	for id, r := range l.recent {
		if n++; n > 8 {
			return
		}
		if len(r) == 0 || now.Sub(r[len(r)-1]) >= l.window {
			delete(l.recent, id)
		}
	}
}
