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

// ProgressMode says how a Progress shows itself.
type ProgressMode int

const (
	// ProgressOff draws nothing.
	ProgressOff ProgressMode = iota
	// ProgressTerminal redraws one line in place (carriage return and erase-line), for a
	// terminal.
	ProgressTerminal
	// ProgressLines writes plain lines (no control characters) now and then, for logs and
	// pipes: one when the status changes, and one per tick of the clock.
	ProgressLines
)

// Default redraw intervals of the clock.
const (
	DefaultTerminalInterval = 250 * time.Millisecond
	DefaultLinesInterval    = 10 * time.Second
)

// ProgressOptions configures a Progress. The zero value of each field is its default.
type ProgressOptions struct {
	Mode ProgressMode
	// Interval is how often the clock redraws (DefaultTerminalInterval on a terminal,
	// DefaultLinesInterval in lines mode).
	Interval time.Duration
	// Now is the clock (time.Now); Tick, when set, replaces the ticker at Interval, and each
	// tick's time is the time drawn. Tests inject both.
	Now  func() time.Time
	Tick <-chan time.Time
}

// Progress shows that a long run (autotuning, a secure inference, a batch) is alive and where it
// is: the step running and its name, the items (inputs of a batch) done with their rate and the
// time left, the time since the start, or a status such as "waiting for the server". A ticker
// goroutine redraws it on the clock, so the time moves on while one step runs for long. On a
// terminal it is one line redrawn in place; elsewhere (ProgressLines) plain periodic lines. It is
// safe for concurrent use, and a nil *Progress does nothing.
type Progress struct {
	mu      sync.Mutex
	w       io.Writer
	label   string
	mode    ProgressMode
	now     func() time.Time
	started time.Time
	last    time.Time // the last redraw on an Update (terminal: at most one per 50 ms)
	drew    bool      // a terminal line is on screen

	status      string // shown instead of the steps while set
	done, total int    // steps
	detail      string // the step running
	items, of   int    // items done, of how many (0: no items)
	itemsFrom   time.Time

	stop    chan struct{}
	stopped chan struct{}
}

// NewProgress returns a bar labelled label that draws on w, in place, when on is set; callers
// pass IsTerminal(w) && !quiet, so that logs and pipes get no control characters.
func NewProgress(w io.Writer, label string, on bool) *Progress {
	mode := ProgressOff
	if on {
		mode = ProgressTerminal
	}
	return NewProgressWith(w, label, ProgressOptions{Mode: mode})
}

// NewProgressWith returns a Progress labelled label that draws on w as o says, and starts its
// clock (stopped by Done).
func NewProgressWith(w io.Writer, label string, o ProgressOptions) *Progress {
	p := &Progress{w: w, label: label, mode: o.Mode, now: o.Now}
	if p.now == nil {
		p.now = time.Now
	}
	p.started = p.now()
	if p.mode == ProgressOff {
		return p
	}
	tick := o.Tick
	var ticker *time.Ticker
	if tick == nil {
		d := o.Interval
		if d <= 0 {
			d = DefaultTerminalInterval
			if p.mode == ProgressLines {
				d = DefaultLinesInterval
			}
		}
		ticker = time.NewTicker(d)
		tick = ticker.C
	}
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.stopped)
		if ticker != nil {
			defer ticker.Stop()
		}
		for {
			select {
			case <-p.stop:
				return
			case t := <-tick:
				p.mu.Lock()
				p.draw(t)
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// Update records that done of total steps are done and detail (may be empty) runs now, and
// redraws (on a terminal at most every 50 ms; in lines mode only the clock draws). It clears
// the status.
func (p *Progress) Update(done, total int, detail string) {
	if p == nil || p.mode == ProgressOff || total <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status = ""
	p.done, p.total, p.detail = min(max(done, 0), total), total, detail
	if p.mode != ProgressTerminal {
		return
	}
	now := p.now()
	if done < total && now.Sub(p.last) < 50*time.Millisecond {
		return
	}
	p.last = now
	p.draw(now)
}

// Items records that done of total items (the inputs of a batch) are done, for the count, the
// rate and the time left; the rate counts from the first call.
func (p *Progress) Items(done, total int) {
	if p == nil || p.mode == ProgressOff {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.of == 0 {
		p.itemsFrom = p.now()
	}
	p.items, p.of = done, total
}

// Status shows s (e.g. "waiting for the server at host:7070…") until the next Update: at once,
// and in lines mode as a line of its own.
func (p *Progress) Status(s string) {
	if p == nil || p.mode == ProgressOff {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s == p.status {
		return
	}
	p.status = s
	p.draw(p.now())
}

// Erase takes a terminal line off the screen (before printing something else on the terminal);
// the clock draws it again.
func (p *Progress) Erase() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
}

// Done stops the clock and erases the bar.
func (p *Progress) Done() {
	if p == nil {
		return
	}
	if p.stop != nil {
		select {
		case <-p.stop:
		default:
			close(p.stop)
		}
		<-p.stopped
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
}

func (p *Progress) erase() {
	if p.drew {
		fmt.Fprint(p.w, "\r\033[K")
		p.drew = false
	}
}

// draw writes the progress at time now as the mode says; the caller holds mu.
func (p *Progress) draw(now time.Time) {
	text := p.text(now)
	switch p.mode {
	case ProgressTerminal:
		fmt.Fprintf(p.w, "\r\033[K%s", text)
		p.drew = true
	case ProgressLines:
		fmt.Fprintf(p.w, "%s\n", text)
	}
}

// text is the progress line without control characters: the label, a bar on a terminal, the
// counts, the time since the start, and the status or the step running.
func (p *Progress) text(now time.Time) string {
	var b strings.Builder
	b.WriteString(p.label)
	if p.mode == ProgressLines {
		b.WriteString(":")
	}
	if p.total > 0 && p.status == "" && p.mode == ProgressTerminal {
		const width = 30
		fill := width * p.done / p.total
		if p.of > 1 {
			fill = width * p.items / p.of
		}
		fmt.Fprintf(&b, " [%s%s]", strings.Repeat("#", fill), strings.Repeat(".", width-fill))
	}
	if p.of > 1 {
		fmt.Fprintf(&b, " %d/%d done", p.items, p.of)
		if el := now.Sub(p.itemsFrom); p.items > 0 && el > 0 {
			rate := float64(p.items) / el.Seconds()
			left := time.Duration(float64(p.of-p.items) / rate * float64(time.Second))
			fmt.Fprintf(&b, ", %s/s, ETA %s", fmtRate(rate), fmtDuration(left))
		}
		b.WriteString(",")
	} else if p.total > 0 && p.status == "" {
		fmt.Fprintf(&b, " %d/%d", p.done, p.total)
	}
	fmt.Fprintf(&b, " %s", fmtDuration(max(now.Sub(p.started), 0)))
	detail := p.detail
	if p.status != "" {
		detail = p.status
	} else if detail != "" {
		detail = "running " + detail
	}
	if detail != "" {
		if r := []rune(detail); len(r) > 60 && p.mode == ProgressTerminal { // one screen line
			detail = string(r[:59]) + "…"
		}
		b.WriteString(" " + detail)
	}
	return b.String()
}

func fmtRate(r float64) string {
	if r >= 10 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.2g", r)
}

// fmtDuration prints whole seconds (1m05s), and tenths under ten seconds.
func fmtDuration(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}
