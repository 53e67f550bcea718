// Package progress shows what long-running parallel work is doing: one live
// row per job (stage and elapsed time) redrawn in place on a terminal, and
// plain timestamped lines, one per stage change, anywhere else.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// IsTerminal reports whether w is a terminal that can take cursor moves.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb"
}

// Board tracks jobs by key.
type Board struct {
	mu    sync.Mutex
	w     io.Writer
	live  bool
	start time.Time
	rows  []*row
	drawn int // rows on screen (live mode)
	stop  chan struct{}
	done  chan struct{}
}

type row struct {
	key, stage string
	since      time.Time
	finished   bool
	took       time.Duration
}

// New returns a board writing to w; live redraws rows in place.
func New(w io.Writer, live bool) *Board {
	b := &Board{w: w, live: live, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	if live {
		go b.tick()
	} else {
		close(b.done)
	}
	return b
}

func (b *Board) tick() {
	defer close(b.done)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.mu.Lock()
			b.redraw()
			b.mu.Unlock()
		}
	}
}

func (b *Board) find(key string) *row {
	for _, r := range b.rows {
		if r.key == key {
			return r
		}
	}
	r := &row{key: key, since: time.Now()}
	b.rows = append(b.rows, r)
	return r
}

// Set records that job key entered stage.
func (b *Board) Set(key, stage string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.find(key)
	r.stage = stage
	if b.live {
		b.redraw()
		return
	}
	fmt.Fprintf(b.w, "[%6.1fs] %s: %s\n", time.Since(b.start).Seconds(), key, stage)
}

// Finish records that job key ended, with a one-line outcome.
func (b *Board) Finish(key, outcome string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.find(key)
	r.stage, r.finished, r.took = outcome, true, time.Since(r.since)
	if b.live {
		b.redraw()
		return
	}
	fmt.Fprintf(b.w, "[%6.1fs] %s: %s (%.1fs)\n", time.Since(b.start).Seconds(), key, outcome, r.took.Seconds())
}

// Printf writes a line above the live rows (or just a line).
func (b *Board) Printf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.live {
		b.clear()
	}
	fmt.Fprintf(b.w, format, args...)
	if !strings.HasSuffix(format, "\n") {
		fmt.Fprintln(b.w)
	}
	if b.live {
		b.redraw()
	}
}

// Stop draws the final state and stops redrawing.
func (b *Board) Stop() {
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.live {
		b.redraw()
	}
}

// clear moves the cursor to the first live row and erases to the end.
func (b *Board) clear() {
	if b.drawn > 0 {
		fmt.Fprintf(b.w, "\x1b[%dA\r\x1b[J", b.drawn)
	}
	b.drawn = 0
}

func (b *Board) redraw() {
	b.clear()
	for _, r := range b.rows {
		took := r.took
		if !r.finished {
			took = time.Since(r.since)
		}
		fmt.Fprintf(b.w, "%-6s %6.1fs  %s\n", r.key, took.Seconds(), r.stage)
	}
	b.drawn = len(b.rows)
}
