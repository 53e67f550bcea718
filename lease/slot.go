package lease

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// cancelGrace is how long a cancelled call waits for the server's answer
// before its connection is closed (its outcome is then unknown).
const cancelGrace = time.Second

// renewGrace is cancelGrace for renewals, whose outcome the client never
// needs: a renewal that times out gives up its connection soon, so that
// the next try is not held up behind it.
const renewGrace = 100 * time.Millisecond

// cancelSettle is how long a connection stays unused after a cancel
// request: the server may act on a request after it has acknowledged it,
// and it must not cancel the connection's next call instead.
const cancelSettle = 100 * time.Millisecond

// slot is one connection of the client, used by one call at a time and
// reconnected after a failure. A call that runs longer than timeout is
// cancelled on the server (a cancel request), and its connection closed
// if the server does not answer within cancelGrace, so that the server
// stops the statement instead of finishing it unseen.
//
// The timeout is kept by one timer per slot, not one per call. A call
// notes when it started; the timer fires at the start of some call plus
// the timeout, at the latest, and looks at the call that runs then: it
// cancels it when it has run for the timeout, and otherwise waits until
// that call's own start plus the timeout. So a client that is busy with
// calls touches its timer once per timeout, not twice per call: arming a
// timer can wake a sleeping thread of Go's runtime, which costs more than
// the client's own work in a call (docs/client.md, the cost).
type slot struct {
	cfg     *pgx.ConnConfig
	timeout time.Duration
	grace   time.Duration // cancelGrace, or renewGrace

	mu     sync.Mutex // held for a whole call
	closed bool       // no call after close: it would connect again
	conn   *pgx.Conn
	warned bool // the last call drew the cancelled-wait warning
	// session is the server session of conn; orphan, the session of a
	// connection dropped during a call, whose statement may still run on
	// the server: its outcome is settled only once that session is done
	session, orphan session

	wmu     sync.Mutex     // the timeout's state, below
	running *pgconn.PgConn // the running call's connection; nil between calls
	started time.Time      // when the running call started
	timer   *time.Timer    // calls expire; set while armed
	armed   bool
	// cancelled is set when the running call was cancelled for its
	// timeout, and closed once the cancel request is done
	cancelled chan struct{}
}

func newSlot(pc *pgx.ConnConfig, timeout, grace time.Duration) *slot {
	s := &slot{timeout: timeout, grace: grace}
	s.cfg = pc.Copy()
	// a call whose ctx ends is cancelled on the server as one that runs
	// past the timeout is: a cancel request, and the connection closed
	// only if the server does not answer within grace, so that the server
	// stops the statement instead of finishing it unseen
	s.cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, CancelRequestDelay: 0, DeadlineDelay: grace}
	}
	s.cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		// the commit happened locally, but its wait for the synchronous
		// standbys was cancelled: not known to be durable there
		if strings.HasPrefix(n.Message, "canceling wait for synchronous replication") {
			s.warned = true
		}
	}
	return s
}

// do runs f on the slot's connection, (re)connecting first, with the
// call bounded by the slot's timeout (and cancelled, as pgx does, when
// ctx ends); it reports whether the call drew the cancelled-wait warning.
// A call cancelled for its timeout returns a *TimeoutError.
func (s *slot) do(ctx context.Context, f func(context.Context, *pgx.Conn) error) (warned bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, &connectError{ErrClosed}
	}
	// a (re)connect and the call share the one timeout
	start := time.Now()
	if s.conn == nil || s.conn.IsClosed() {
		cctx, cancel := context.WithDeadline(ctx, start.Add(s.timeout))
		conn, err := pgx.ConnectConfig(cctx, s.cfg)
		if err == nil {
			// which session this is, so that a call lost with it can be
			// settled after the session is done (settle)
			err = conn.QueryRow(cctx, sessionSQL).Scan(&s.session.pid, &s.session.start)
			if err != nil {
				conn.Close(context.Background())
			}
		}
		cancel()
		if err != nil {
			return false, &connectError{err}
		}
		s.conn = conn
	}
	s.warned = false
	s.watch(s.conn.PgConn(), start)
	err = f(ctx, s.conn)
	if s.unwatch() && err != nil {
		err = &TimeoutError{After: s.timeout, Err: err}
	}
	if err != nil && !isPgError(err) {
		// the connection's state is unknown: start over with a new one
		s.conn.Close(context.Background())
		s.conn = nil
		s.orphan = s.session
	}
	return s.warned, err
}

// session names a server session: its process and when it started (a
// process id alone may have been reused, or be another server's).
type session struct {
	pid   int32
	start time.Time
}

const (
	sessionSQL = "SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()"
	// the orphan, until it has ended (its transaction over, committed or
	// rolled back: the backend leaves pg_stat_activity after that)
	orphanSQL = "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND backend_start = $2"
)

// settle waits until the session of the connection that the last call
// lost (if any) has ended. Until then the call's statement may still
// commit on the server, after a look at the name would have shown it not
// done; and an idle session is not enough, since the request may still
// be on its way to it (the end of the connection comes after it). The
// session is not terminated: it may be a pooler's, serving others. An
// error means it still ran when the slot's timeout was near (a pooler
// that keeps its server connection keeps it running), and the outcome
// stays unknown.
func (s *slot) settle(ctx context.Context) error {
	_, err := s.do(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		o := s.orphan // s.mu is held (do)
		if o.pid == 0 {
			return nil
		}
		until := time.Now().Add(s.timeout * 3 / 4)
		for {
			var n int
			if err := conn.QueryRow(ctx, orphanSQL, o.pid, o.start).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				s.orphan = session{}
				return nil
			}
			if time.Now().After(until) {
				return fmt.Errorf("the session that sent it (pid %d) still runs", o.pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	return err
}

// watch notes that a call that started at start runs on pc, and arms
// the timer unless it is armed already (for an earlier call: it fires
// before this one's time, and waits on).
func (s *slot) watch(pc *pgconn.PgConn, start time.Time) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.running, s.started = pc, start
	if s.armed {
		return
	}
	s.armed = true
	if s.timer == nil {
		s.timer = time.AfterFunc(time.Until(start.Add(s.timeout)), s.expire)
	} else {
		s.timer.Reset(time.Until(start.Add(s.timeout)))
	}
}

// expire is the timer's: it cancels the running call if it has run for
// the timeout, and otherwise waits for that call's time. Between calls
// the timer rests until the next call arms it.
func (s *slot) expire() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.running == nil || s.cancelled != nil {
		s.armed = false
		return
	}
	if left := s.timeout - time.Since(s.started); left > 0 {
		s.timer.Reset(left)
		return
	}
	s.armed = false
	pc, done := s.running, make(chan struct{})
	s.cancelled = done
	// the server has the slot's grace to answer; then the call's read
	// fails and the connection is closed
	deadline := time.Now().Add(s.grace)
	pc.Conn().SetDeadline(deadline)
	go func() {
		defer close(done)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		pc.CancelRequest(ctx)
		cancel()
		time.Sleep(cancelSettle)
	}()
}

// unwatch notes that the call has returned; if it was cancelled for its
// timeout, it waits until the cancel request is done and lifts the
// connection's deadline, and reports so.
func (s *slot) unwatch() (cancelled bool) {
	s.wmu.Lock()
	pc, done := s.running, s.cancelled
	s.running, s.cancelled = nil, nil
	s.wmu.Unlock()
	if done == nil {
		return false
	}
	<-done
	pc.Conn().SetDeadline(time.Time{})
	return true
}

// close waits for a running call (which its timer still bounds), then
// stops the timer and closes the connection.
func (s *slot) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.wmu.Lock()
	if s.timer != nil {
		s.timer.Stop()
		s.armed = false
	}
	s.wmu.Unlock()
	if s.conn == nil {
		return nil
	}
	err := s.conn.Close(context.Background())
	s.conn = nil
	return err
}

// TimeoutError is a call to the server that did not return within
// Config.CallTimeout and was cancelled. Err is what the call returned
// then: the server's error when it stopped the statement (it did
// nothing), or the connection's when it did not answer in time (the
// outcome is unknown, and the client settles it before it reports
// anything). It matches context.DeadlineExceeded.
type TimeoutError struct {
	After time.Duration
	Err   error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("no answer within %v (Config.CallTimeout), cancelled: %v", e.After, e.Err)
}

func (e *TimeoutError) Unwrap() []error { return []error{e.Err, context.DeadlineExceeded} }
