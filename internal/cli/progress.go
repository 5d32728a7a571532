package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// IsTerminal reports whether w is an interactive terminal (a character device).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Progress draws a one-line progress bar on a terminal and nothing elsewhere: long runs (autotuning,
// a secure inference) show that they are alive without filling logs. It is safe for concurrent use;
// redraws are limited to one per 50 ms (and the last one).
type Progress struct {
	mu      sync.Mutex
	w       io.Writer
	label   string
	on      bool
	started time.Time
	last    time.Time
	drew    bool
}

// NewProgress returns a bar labelled label that draws on w when on is set; callers pass
// IsTerminal(w) && !quiet, so that logs and pipes get no control characters.
func NewProgress(w io.Writer, label string, on bool) *Progress {
	return &Progress{w: w, label: label, on: on, started: time.Now()}
}

// Update redraws the bar: done of total steps, and detail (what runs now, may be empty).
func (p *Progress) Update(done, total int, detail string) {
	if p == nil || !p.on || total <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if done < total && now.Sub(p.last) < 50*time.Millisecond {
		return
	}
	p.last = now
	const width = 30
	done = min(max(done, 0), total)
	fill := width * done / total
	if len(detail) > 40 {
		detail = detail[:39] + "…"
	}
	fmt.Fprintf(p.w, "\r\033[K%s [%s%s] %d/%d %.0fs %s", p.label, strings.Repeat("#", fill),
		strings.Repeat(".", width-fill), done, total, time.Since(p.started).Seconds(), detail)
	p.drew = true
}

// Done erases the bar.
func (p *Progress) Done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drew {
		fmt.Fprint(p.w, "\r\033[K")
		p.drew = false
	}
}
