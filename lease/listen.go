package lease

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// listener holds the client's LISTEN connection while an Acquire waits,
// and wakes the waiters of a name when a release of it is notified. When
// the connection is down, waiters poll; it reconnects by itself.
type listener struct {
	cfg *pgx.ConnConfig
	c   Config
	log *slog.Logger

	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
	ready   chan struct{} // closed once LISTEN is in place (renewed per connection)
	cancel  context.CancelFunc
	done    chan struct{}
	closed  bool
}

func newListener(pc *pgx.ConnConfig, c Config, log *slog.Logger) *listener {
	return &listener{cfg: pc.Copy(), c: c, log: log, waiters: map[string]map[chan struct{}]struct{}{}}
}

// watch registers a waiter for name and returns its wake channel; it
// starts the listener if needed and waits (at most CallTimeout) for its
// LISTEN, so that a release after this returns is not missed.
func (l *listener) watch(ctx context.Context, name string) chan struct{} {
	ch := make(chan struct{}, 1)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ch
	}
	if l.waiters[name] == nil {
		l.waiters[name] = map[chan struct{}]struct{}{}
	}
	l.waiters[name][ch] = struct{}{}
	if l.done == nil {
		var lctx context.Context
		lctx, l.cancel = context.WithCancel(context.Background())
		l.ready, l.done = make(chan struct{}), make(chan struct{})
		go l.run(lctx, l.ready)
	}
	ready := l.ready
	l.mu.Unlock()
	t := time.NewTimer(l.c.CallTimeout)
	defer t.Stop()
	select {
	case <-ready:
	case <-t.C: // down: the waiter polls meanwhile
	case <-ctx.Done():
	}
	return ch
}

func (l *listener) unwatch(name string, ch chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.waiters[name], ch)
	if len(l.waiters[name]) == 0 {
		delete(l.waiters, name)
	}
}

// run keeps a connection that listens on Channel, reconnecting after a
// failure, until ctx ends.
func (l *listener) run(ctx context.Context, ready chan struct{}) {
	defer close(l.done)
	backoff := l.c.PollMin
	for ctx.Err() == nil {
		err := l.listenOnce(ctx, ready)
		if ctx.Err() != nil {
			return
		}
		l.log.Warn("pg_lease: the notification connection failed; waiters poll until it is back", "err", err)
		// a release while it was down woke nobody: every waiter tries again
		l.wakeAll()
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, l.c.PollMax)
		l.mu.Lock()
		select {
		case <-ready:
			ready = make(chan struct{})
			l.ready = ready
		default:
		}
		l.mu.Unlock()
	}
}

func (l *listener) listenOnce(ctx context.Context, ready chan struct{}) error {
	cctx, cancel := context.WithTimeout(ctx, l.c.CallTimeout)
	conn, err := pgx.ConnectConfig(cctx, l.cfg)
	if err == nil {
		_, err = conn.Exec(cctx, "LISTEN "+Channel)
	}
	cancel()
	if err != nil {
		if conn != nil {
			conn.Close(context.Background())
		}
		return err
	}
	defer conn.Close(context.Background())
	close(ready)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		l.wake(n.Payload)
	}
}

func (l *listener) wake(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch := range l.waiters[name] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (l *listener) wakeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, chs := range l.waiters {
		for ch := range chs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

func (l *listener) close() {
	l.mu.Lock()
	l.closed = true
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}
