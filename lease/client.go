// Package lease is a Go client for pg_lease, the PostgreSQL extension that
// gives expiring ownership of named resources with fencing epochs.
//
// A Client holds leases for one process: Acquire waits for a name (woken
// at once when its holder releases it, at the lease's
// expiry otherwise, polling with jitter in between), and the Lease it
// returns renews itself in the background until it is released or lost.
// Its Context ends when the lease is lost, at the latest at a local
// deadline taken from the monotonic clock: the moment the last successful
// grant or renewal was sent, plus the TTL, minus Config.Margin. Its Err
// reads that clock, so a process that was paused past the deadline sees
// the loss in the first check it makes. The server's expiry is never
// compared with the local clock.
//
// Every call runs autocommitted on the client's own connections, never in
// the caller's transaction. A call whose outcome is unknown (the
// connection lost or the call timed out while it ran, or the cancelled
// wait for synchronous replication) is settled with lease.inspect before
// the client reports anything, so it never hands out an epoch that is not
// given. Epochs are int64 fencing tokens: compare them, never subtract
// them (an era change makes them jump).
//
// It needs pg_lease 0.5.0 or later, whose sessions keep every name a client
// holds alive in one call. The package depends on pgx and the standard
// library only.
package lease

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// channel is the notification channel that the extension's release
// notifies (with the name as the payload) while a session watches the
// name (lease.watch), as a Client waiting for it does.
const channel = "lease_released"

// The SQL of each call.
const (
	// (with how long the answer lets its holder believe, from its send:
	// expires_at - clock_timestamp() in the same statement, pg_lease's
	// rule; the TTL for a new grant)
	// a release notifies channel only while some session watches the name
	releaseSQL = "SELECT lease.release($1, $2, $3)"
	watchSQL   = "SELECT lease.watch($1)"
	unwatchSQL = "SELECT lease.unwatch($1)"
	// how long the lease has left, in server time: never compared with
	// this machine's clock
	inspectSQL = "SELECT held, owner, epoch, greatest(expires_at - clock_timestamp(), interval '0') FROM lease.inspect($1)"
	guardSQL   = "SELECT lease.guard($1, $2, $3)"
	// sessions (pg_lease 0.5.0)
	openSessionSQL    = "SELECT session, expires_at, era FROM lease.open_session($1, $2::interval)"
	sessionAcquireSQL = "SELECT acquired, epoch, expires_at, expires_at - clock_timestamp() FROM lease.session_acquire($1, $2, $3)"
	// released: how many of the session's names lease.release has
	// released (pg_lease 0.5.1; NULL before), read so that it works on both
	keepAliveSQL = "SELECT k.status, k.expires_at, k.era, (to_jsonb(k) ->> 'released')::bigint FROM lease.keep_alive($1, $2) AS k"
	// sent before keepAliveSQL in one batch, one implicit transaction: the
	// keep-alive commits without a flush or a wait for a synchronous
	// standby (0.5.0's grace covers a keep-alive lost in a crash or a
	// failover; on a database without it, keep_alive raises the commit to
	// the floor itself, seeing this setting)
	keepAliveOffSQL = "SELECT set_config('synchronous_commit', 'off', true)"
	// the names the server holds under a session (its owner is the
	// session's alone)
	sessionNamesSQL = "SELECT name, epoch FROM lease.list() WHERE owner = $1"
	closeSessionSQL = "SELECT status, released FROM lease.close_session($1, $2)"
)

// Client holds leases on one database. It is safe for concurrent use.
type Client struct {
	cfg    Config
	log    *slog.Logger
	calls  *slot // acquire, release, inspect, sessions opened and closed
	keep   *slot // keep-alives and renewals: not delayed by a slow acquire
	listen *listener
	token  string // this client's part of its sessions' owners
	seq    atomic.Uint64

	// opening is held while a session is opened
	opening sync.Mutex

	mu     sync.Mutex
	held   map[*Lease]struct{}
	byName map[string]*Lease // the held leases by name
	// acquiring: the names a TryAcquire of this client is taking, or a
	// Release of a lease under the session releasing, now: under one
	// session, an acquire meanwhile would be given the same epoch again
	acquiring map[string]bool
	// leftoverRun: releaseLeftovers runs
	leftoverRun bool
	// session is the client's session, nil until the first acquire and
	// after it was lost
	session *keeper
	// keepers: every keeper that lives (the session, and one that was
	// replaced and has not ended yet)
	keepers map[*keeper]struct{}
	// leftovers: the names under a session whose Release failed, by name
	leftovers map[string]leftover
	closed    bool
	// renewTimer starts the keepers' renewals (renewDue); it fires at
	// renewWhen, zero while it rests
	renewTimer *time.Timer
	renewWhen  time.Time
}

// New makes a client for the database connString names (a libpq URL or
// key=value string, as pgx.ParseConfig reads it). It connects when first
// used; each client opens up to three connections of its own: calls,
// renewals and notifications.
func New(connString string, cfg Config) (*Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	pc, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("lease: %w", err)
	}
	var b [6]byte
	crand.Read(b[:])
	c := &Client{cfg: cfg, log: cfg.Logger, token: hex.EncodeToString(b[:]),
		held: map[*Lease]struct{}{}, byName: map[string]*Lease{}, acquiring: map[string]bool{},
		keepers: map[*keeper]struct{}{}, leftovers: map[string]leftover{}}
	c.calls = newSlot(pc, cfg.CallTimeout, cancelGrace)
	// a renewal's outcome never needs settling (one that is lost extends
	// nothing the client counts on): its connection is dropped soon after
	// a timeout, so that the next try comes RenewEvery/4 later
	c.keep = newSlot(pc, cfg.CallTimeout, renewGrace)
	c.listen = newListener(pc, cfg, c.log)
	return c, nil
}

// Close ends the client: every lease it holds ends with ErrClosed (their
// contexts end) and is released on the server, so that a waiter takes the
// name at once, as etcd's Session.Close revokes its lease: the client's
// session is closed, which releases every name under it in one call; then
// its connections close. The releases take at most 2×CallTimeout in all; if
// they fail, the names lapse at their TTL, and Close returns the error.
// Orphan ends the client without releasing.
func (c *Client) Close() error { return c.close(true) }

// Orphan ends the client as Close does but leaves its session and leases
// on the server to lapse at their TTL (etcd's Session.Orphan): for a process
// that hands its work over by time, or that cannot reach the server.
func (c *Client) Orphan() error { return c.close(false) }

func (c *Client) close(release bool) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	if c.renewTimer != nil {
		c.renewTimer.Stop()
	}
	session := c.session
	c.mu.Unlock()
	var errs []error
	if session != nil {
		session.end(func(*Lease) error { return ErrClosed }, true)
		if release {
			errs = append(errs, session.closeSession())
		} else {
			session.waitRenewal()
		}
	}
	c.listen.close()
	errs = append(errs, c.calls.close(), c.keep.close())
	return errors.Join(errs...)
}

// Config is the client's configuration, with New's defaults filled in.
func (c *Client) Config() Config { return c.cfg }

// TryAcquire takes the lease on name if it is free (released or lapsed),
// without waiting: ErrNotAcquired when another owner holds it (a
// *GraceError, which is one too, when the server is in its grace after a
// fault), ErrAlreadyHeld when this client does. The name is held under
// the client's session, opened by the first acquire; on an extension
// before 0.5.0, which has no sessions, it returns an error naming the
// version.
func (c *Client) TryAcquire(ctx context.Context, name string) (*Lease, error) {
	c.mu.Lock()
	closed, mine := c.closed, c.byName[name]
	c.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if mine != nil && mine.Err() == nil {
		return nil, fmt.Errorf("lease %q (epoch %d): %w", name, mine.Epoch, ErrAlreadyHeld)
	}
	// one acquire or release of a name at a time in this client: under
	// one session, a second acquire would be granted the first's lease
	// again, and an acquire beside a release the lease being released
	// (a lease that has ended is not held, though the goroutine that
	// ended it may not have taken it out of byName yet: a lease lost at
	// its deadline while its Run released it, under load)
	c.mu.Lock()
	now, busy := c.byName[name], c.acquiring[name]
	if now != nil && now.hasEnded() {
		now = nil
	}
	if now == nil && !busy {
		c.acquiring[name] = true
	}
	c.mu.Unlock()
	if now != nil {
		return nil, fmt.Errorf("lease %q (epoch %d): %w", name, now.Epoch, ErrAlreadyHeld)
	}
	if busy {
		return nil, fmt.Errorf("lease %q: another call of this client is acquiring or releasing it: %w", name, ErrNotAcquired)
	}
	defer func() {
		c.mu.Lock()
		delete(c.acquiring, name)
		c.mu.Unlock()
	}()
	for try := 0; ; try++ {
		k, err := c.sessionFor(ctx)
		if err != nil {
			return nil, fmt.Errorf("lease %q: %w", name, err)
		}
		l, err := c.tryUnder(ctx, k, name)
		if errors.Is(err, errSessionGone) && try == 0 {
			continue // once more, under a new session
		}
		return l, err
	}
}

// errSessionGone: session_acquire found the session gone (lapsed on the
// server, or lost with a restore): the client opens a new one.
var errSessionGone = errors.New("the client's session is no longer alive on the server")

// tryUnder takes name under session k.
func (c *Client) tryUnder(ctx context.Context, k *keeper, name string) (*Lease, error) {
	// a name whose release failed under this session is released first:
	// the session would give it back with its epoch, which that release,
	// retried, would end
	c.mu.Lock()
	lo, left := c.leftovers[name]
	c.mu.Unlock()
	if left && lo.k == k {
		if err := c.releaseLeftover(ctx, lo); err != nil {
			return nil, fmt.Errorf("lease %q: its earlier release (epoch %d) has not reached the server yet: %w", name, lo.epoch, err)
		}
	}
	sent := time.Now()
	l, err := c.grant(ctx, name, k.owner, func(ctx context.Context, conn *pgx.Conn) pgx.Row {
		return conn.QueryRow(ctx, sessionAcquireSQL, k.session, k.owner, name)
	}, func(epoch int64, _ time.Duration) *Lease {
		// (held until the session's deadline, which its answer's span
		// is the server's side of)
		return c.holdUnder(k, name, epoch, sent)
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "55000" {
		k.lose("lapsed", err)
		return nil, fmt.Errorf("lease %q: %w: %w", name, errSessionGone, err)
	}
	if l != nil {
		if lerr := l.Err(); lerr != nil {
			// granted under a session that ended meanwhile
			if errors.Is(lerr, ErrClosed) {
				return nil, ErrClosed
			}
			return nil, fmt.Errorf("lease %q: granted under the client's session, which ended meanwhile: %w", name, lerr)
		}
	}
	return l, err
}

// grant runs an acquire (query: its row of acquired, epoch, expires_at
// and the span its answer lets the holder believe) for owner and holds
// what it granted. An acquire whose outcome is unknown is settled with
// lease.inspect first.
func (c *Client) grant(ctx context.Context, name, owner string, query func(context.Context, *pgx.Conn) pgx.Row, hold func(epoch int64, span time.Duration) *Lease) (*Lease, error) {
	var acquired bool
	var epoch *int64
	var until *time.Time
	var span *time.Duration
	warned, err := c.calls.do(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		return query(ctx, conn).Scan(&acquired, &epoch, &until, &span)
	})
	if err == nil && !warned {
		if !acquired && until != nil {
			return nil, &GraceError{Name: name, Until: *until}
		}
		if !acquired || epoch == nil || span == nil {
			return nil, ErrNotAcquired
		}
		return hold(*epoch, *span), nil
	}
	if err != nil && known(err) {
		return nil, fmt.Errorf("lease %q: acquire: %w", name, err)
	}
	// unknown: only lease.inspect can say whether this grant was made
	why := "the cancelled wait for synchronous replication"
	if err != nil {
		why = err.Error()
	}
	// a statement lost with its connection may still commit: first wait
	// until its session is done with it
	serr := c.calls.settle(context.WithoutCancel(ctx))
	var st state
	if serr == nil {
		st, serr = c.inspect(context.WithoutCancel(ctx), name)
	}
	if serr != nil {
		return nil, fmt.Errorf("lease %q: acquire's outcome is unknown (%s) and could not be settled (%w): not held; a grant it made lapses after the TTL", name, why, serr)
	}
	// the owner is this grant's, or this client's session's, which no
	// other call of the client is acquiring the name under (acquiring)
	if st.held && st.owner == owner {
		c.log.Info("pg_lease: an acquire with an unknown outcome was granted", "name", name, "epoch", st.epoch, "cause", why)
		// (a grant made after the send: the TTL from it)
		return hold(st.epoch, c.cfg.TTL), nil
	}
	c.log.Info("pg_lease: an acquire with an unknown outcome was not granted", "name", name, "cause", why)
	if err == nil {
		return nil, ErrNotAcquired
	}
	return nil, fmt.Errorf("lease %q: acquire failed (%w); lease.inspect shows it was not granted", name, err)
}

// Acquire takes the lease on name, waiting while another owner holds it
// until ctx ends. A wait wakes at once when the holder releases the name
// (the client watches it: lease.watch), when
// the holder's lease expires (server time), and
// otherwise polls from PollMin to PollMax with jitter. Errors other than
// contention are retried within the wait and logged (the first of a run
// as a warning, the others at debug level); an extension without
// sessions is not. A name this client holds already is not waited for:
// ErrAlreadyHeld.
func (c *Client) Acquire(ctx context.Context, name string) (*Lease, error) {
	// a free name is taken without watching it
	if l, err := c.TryAcquire(ctx, name); err == nil || errors.Is(err, ErrClosed) || errors.Is(err, ErrAlreadyHeld) || errors.Is(err, ErrOldExtension) {
		return l, err
	}
	// else watch it, then try again (a release before the watch was in
	// place is seen by that try) and wait
	wake := c.listen.watch(ctx, name)
	defer c.listen.unwatch(name, wake)
	poll := c.cfg.PollMin
	failures := 0
	for {
		l, err := c.TryAcquire(ctx, name)
		if err == nil {
			if failures > 0 {
				c.log.Info("pg_lease: acquired after failed tries", "name", name, "failed", failures)
			}
			return l, nil
		}
		if errors.Is(err, ErrClosed) || errors.Is(err, ErrAlreadyHeld) || errors.Is(err, ErrOldExtension) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		wait := poll/2 + rand.N(poll/2+1)
		poll = min(2*poll, c.cfg.PollMax)
		if errors.Is(err, ErrNotAcquired) {
			// wake when the holder's lease runs out, as the server counts it
			if st, err := c.inspect(ctx, name); err == nil && st.held && st.left+time.Millisecond < wait {
				wait = st.left + time.Millisecond
			}
		} else {
			failures++
			level := slog.LevelDebug
			if failures == 1 {
				level = slog.LevelWarn
			}
			c.log.Log(ctx, level, "pg_lease: acquire failed; retrying", "name", name, "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-wake:
			poll = c.cfg.PollMin
		case <-t.C:
		}
		t.Stop()
	}
}

// Run acquires name (waiting as Acquire does), runs fn with a context
// that ends when ctx ends or the lease is lost (its Err and Deadline are
// the lease's Context's, see there), and releases the lease when fn
// returns. It returns fn's error, joined with the lease's end if the
// lease was lost, or the client closed, while fn ran.
func (c *Client) Run(ctx context.Context, name string, fn func(ctx context.Context, l *Lease) error) error {
	l, err := c.Acquire(ctx, name)
	if err != nil {
		return err
	}
	inner, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(l.ctx, func() { cancel(context.Cause(l.ctx)) })
	err = fn(&heldCtx{Context: inner, l: l, caller: ctx}, l)
	stop()
	cancel(nil)
	lost := l.lostErr()
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.CallTimeout*2)
	defer rcancel()
	if rerr := l.Release(rctx); rerr != nil {
		c.log.Warn("pg_lease: release after Run failed; the lease lapses after its TTL", "name", name, "err", rerr)
	}
	return errors.Join(err, lost)
}

type state struct {
	held  bool
	owner string
	epoch int64
	left  time.Duration
}

// inspect reads a name's lease; an absent name is not held.
func (c *Client) inspect(ctx context.Context, name string) (state, error) {
	var st state
	var owner *string
	var epoch *int64
	var left *time.Duration
	var err error
	for try := 0; try < 3; try++ {
		// a read commits nothing: the cancelled-wait warning cannot apply
		_, err = c.calls.do(ctx, func(ctx context.Context, conn *pgx.Conn) error {
			return conn.QueryRow(ctx, inspectSQL, name).Scan(&st.held, &owner, &epoch, &left)
		})
		if err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return st, err
	}
	if owner != nil {
		st.owner = *owner
	}
	if epoch != nil {
		st.epoch = *epoch
	}
	if left != nil {
		st.left = *left
	}
	return st, nil
}

// known says an error leaves no doubt that the call did nothing: the
// server answered with an error (the transaction rolled back), or the
// call was never sent.
func known(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) || pgconn.SafeToRetry(err)
}

func isPgError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}

// isUndefinedFunction: the server has no such function (an extension
// older than the call).
func isUndefinedFunction(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42883"
}

// connectError: the call was never sent.
type connectError struct{ err error }

func (e *connectError) Error() string     { return "connect: " + e.err.Error() }
func (e *connectError) Unwrap() error     { return e.err }
func (e *connectError) SafeToRetry() bool { return true }
