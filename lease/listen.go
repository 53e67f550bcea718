package lease

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// listener holds the client's notification connection while an Acquire
// (or an Election.Observe) waits. On it, the client listens on channel and
// watches each name it waits for (lease.watch: the extension's release
// notifies a name only while some session watches it), and it wakes the
// waiters of a name when its release is notified. When the connection is
// down, waiters poll; it reconnects by itself.
type listener struct {
	cfg *pgx.ConnConfig
	c   Config
	log *slog.Logger

	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
	// tried is closed once the listener has tried to watch the name on
	// its current connection (whether the watch is in place or a release
	// in flight made it wait for the next try)
	tried  map[string]chan struct{}
	kick   chan struct{} // the names waited for changed
	cancel context.CancelFunc
	done   chan struct{}
	closed bool
}

func newListener(pc *pgx.ConnConfig, c Config, log *slog.Logger) *listener {
	cfg := pc.Copy()
	// a wait for a notification is interrupted (to watch a new name) by a
	// deadline on the socket, which leaves the connection usable; the
	// client's other connections cancel on the server instead
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn()}
	}
	// pgx buffers notifications for WaitForNotification only without a
	// handler of the application's
	cfg.OnNotification = nil
	return &listener{cfg: cfg, c: c, log: log, waiters: map[string]map[chan struct{}]struct{}{},
		tried: map[string]chan struct{}{}, kick: make(chan struct{}, 1)}
}

// watch registers a waiter for name and returns its wake channel; it
// starts the listener if needed and waits (at most CallTimeout) until the
// listener has tried to watch the name, so that a release after this
// returns is not missed when the watch is in place. When it is not (the
// connection down, or a release of the name in flight), the waiter polls
// and is woken once the watch is in place.
func (l *listener) watch(ctx context.Context, name string) chan struct{} {
	ch := make(chan struct{}, 1)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ch
	}
	if l.waiters[name] == nil {
		l.waiters[name] = map[chan struct{}]struct{}{}
		l.tried[name] = make(chan struct{})
		l.poke()
	}
	l.waiters[name][ch] = struct{}{}
	if l.done == nil {
		var lctx context.Context
		lctx, l.cancel = context.WithCancel(context.Background())
		l.done = make(chan struct{})
		go l.run(lctx)
	}
	tried := l.tried[name]
	l.mu.Unlock()
	t := time.NewTimer(l.c.CallTimeout)
	defer t.Stop()
	select {
	case <-tried:
	case <-t.C: // down: the waiter polls meanwhile
	case <-ctx.Done():
	}
	// a wake from before this returned is moot: the waiter tries next
	select {
	case <-ch:
	default:
	}
	return ch
}

func (l *listener) unwatch(name string, ch chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.waiters[name], ch)
	if len(l.waiters[name]) == 0 {
		delete(l.waiters, name)
		delete(l.tried, name)
		l.poke()
	}
}

// poke tells the listener that the names changed; l.mu is held.
func (l *listener) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// run keeps a connection that listens on channel and watches the names
// waited for, reconnecting after a failure, until ctx ends.
func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	backoff := l.c.PollMin
	for ctx.Err() == nil {
		err := l.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		l.log.Warn("pg_lease: the notification connection failed; waiters poll until it is back", "err", err)
		// a release while it was down woke nobody: every waiter tries again
		l.mu.Lock()
		for name := range l.tried {
			l.triedNow(name) // a waiter waiting for it polls now
			l.tried[name] = make(chan struct{})
		}
		l.mu.Unlock()
		l.wakeAll()
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, l.c.PollMax)
	}
}

func (l *listener) listenOnce(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, l.c.CallTimeout)
	conn, err := pgx.ConnectConfig(cctx, l.cfg)
	if err == nil {
		_, err = conn.Exec(cctx, "LISTEN "+channel)
	}
	cancel()
	if err != nil {
		if conn != nil {
			conn.Close(context.Background())
		}
		return err
	}
	defer conn.Close(context.Background())
	watched := map[string]bool{} // watches in place on this connection
	for {
		missing, err := l.sync(ctx, conn, watched)
		if err != nil {
			return err
		}
		wctx, wcancel := context.WithCancel(ctx)
		var retry *time.Timer
		if missing {
			retry = time.AfterFunc(l.c.PollMin, wcancel)
		}
		go func() {
			select {
			case <-l.kick:
				wcancel()
			case <-wctx.Done():
			}
		}()
		n, err := conn.WaitForNotification(wctx)
		interrupted := wctx.Err() != nil
		wcancel()
		if retry != nil {
			retry.Stop()
		}
		if err != nil {
			if ctx.Err() == nil && interrupted && !conn.IsClosed() {
				continue // the names changed, or a watch to try again
			}
			return err
		}
		if n != nil {
			l.wake(n.Payload)
		}
	}
}

// sync makes the watches on conn the names waited for; missing reports a
// name whose watch must be tried again (a release of it was in flight).
// A name the server refuses to watch (lease.watch raised an error: a
// name no lease can have) is left to polling; its waiters' own calls
// report the error.
func (l *listener) sync(ctx context.Context, conn *pgx.Conn, watched map[string]bool) (missing bool, err error) {
	l.mu.Lock()
	var add, drop []string
	for name := range l.waiters {
		if _, ok := watched[name]; ok {
			l.triedNow(name) // a new waiter of a name tried already
		} else {
			add = append(add, name)
		}
	}
	for name := range watched {
		if l.waiters[name] == nil {
			drop = append(drop, name)
		}
	}
	l.mu.Unlock()
	// each query with its own timeout: after a reconnect there may be many
	call := func(f func(context.Context) error) error {
		cctx, cancel := context.WithTimeout(ctx, l.c.CallTimeout)
		defer cancel()
		return f(cctx)
	}
	for _, name := range drop {
		if watched[name] {
			if err := call(func(ctx context.Context) error { _, err := conn.Exec(ctx, unwatchSQL, name); return err }); err != nil {
				return false, err
			}
		}
		delete(watched, name)
	}
	for _, name := range add {
		var ok bool
		err := call(func(ctx context.Context) error { return conn.QueryRow(ctx, watchSQL, name).Scan(&ok) })
		var pe *pgconn.PgError
		switch {
		case errors.As(err, &pe):
			l.log.Warn("pg_lease: cannot watch the name; its waiters poll", "name", name, "err", err)
			watched[name] = false // refused: not tried again on this connection
		case err != nil:
			return false, err
		case ok:
			watched[name] = true
			// a release before the watch was in place woke nobody (the
			// waiter's first try comes after it: watch drops this wake)
			l.wake(name)
		default:
			missing = true
		}
		l.mu.Lock()
		l.triedNow(name)
		l.mu.Unlock()
	}
	return missing, nil
}

// triedNow closes name's tried channel if it is open; l.mu is held.
func (l *listener) triedNow(name string) {
	if tried := l.tried[name]; tried != nil {
		select {
		case <-tried:
		default:
			close(tried)
		}
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
