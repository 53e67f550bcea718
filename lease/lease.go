package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Lease is a held lease. It renews itself every Config.RenewEvery until
// it is released or lost; its Context ends then.
type Lease struct {
	// Name is the resource's name.
	Name string
	// Owner is the owner this grant holds the lease under (the client's
	// Config.Owner and a suffix unique to the grant).
	Owner string
	// Epoch is the fencing token: larger for every later holder of the
	// name. Compare epochs; never subtract them.
	Epoch int64

	c      *Client
	ctx    context.Context // ends (Done, Cause) when the lease ends
	cancel context.CancelCauseFunc
	held   *heldCtx // Context: ctx, and Err that consults the clock
	// renewing is held while a renewal runs (in a goroutine of its own,
	// started by the client's renewal timer: a lease has no goroutine of
	// its own between renewals)
	renewing sync.Mutex
	// next is when the lease is renewed next; zero while a renewal runs.
	// Guarded by the client's mu.
	next time.Time

	mu       sync.Mutex
	err      error     // why it ended; nil while held
	deadline time.Time // the local deadline (monotonic)
	// timer fires at the deadline; set when the first renewal is due
	// (before the deadline, by CallTimeout at least: Config), so that a
	// lease released before then costs no timer of its own
	timer *time.Timer
	// lastRenewErr is the last renewal's failure, for the deadline's error
	lastRenewErr error
	// renewSent is when the running renewal was sent; zero between them
	renewSent time.Time
	// failures counts the renewals that failed in a row (only the first
	// of a run is logged as a warning)
	failures int
}

// hold starts keeping a granted lease, whose grant was sent at sent.
func (c *Client) hold(name, owner string, epoch int64, sent time.Time) *Lease {
	l := &Lease{Name: name, Owner: owner, Epoch: epoch, c: c}
	l.ctx, l.cancel = context.WithCancelCause(context.Background())
	l.held = &heldCtx{Context: l.ctx, l: l}
	l.deadline = sent.Add(c.cfg.TTL - c.cfg.Margin)
	c.mu.Lock()
	closed := c.closed
	c.held[l] = struct{}{}
	c.byName[name] = l
	c.renewAtLocked(l, sent.Add(c.cfg.RenewEvery))
	c.mu.Unlock()
	if c.log.Enabled(context.Background(), slog.LevelDebug) {
		c.log.Debug("pg_lease: acquired", "name", name, "epoch", epoch)
	}
	if closed {
		l.end(ErrClosed)
	}
	return l
}

// Context is the lease's context: it ends when the lease is lost,
// released or closed.
//
// Its Err looks at the monotonic clock each time it is called: from the
// instant the local deadline passes it returns context.DeadlineExceeded,
// even in a process that was paused (SIGSTOP, a frozen VM, a long GC
// stop) and has not yet run the timer that ends the lease. Its Deadline
// is the local deadline, which each successful renewal moves later.
// Done closes and context.Cause says why (a *LostError, ErrReleased or
// ErrClosed) once the client has ended the lease, which after a pause
// can be a moment after Err reports it; contexts derived from it follow
// Done. So check Err (or Lease.Err) right before each side effect, and
// fence the effect with the epoch: a check is a moment old when the
// effect lands.
func (l *Lease) Context() context.Context { return l.held }

// Done is closed when the lease is lost or released (see Context: after
// a pause, Err reports the loss first).
func (l *Lease) Done() <-chan struct{} { return l.ctx.Done() }

// Err is nil while the lease is held; then why it ended. Past the local
// deadline it is a *LostError at once, whatever the timers have done.
func (l *Lease) Err() error {
	l.mu.Lock()
	err := l.err
	past := err == nil && !time.Now().Before(l.deadline)
	l.mu.Unlock()
	if !past {
		return err
	}
	l.deadlinePassed()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Deadline is the local deadline: the lease counts as lost then unless a
// renewal succeeds first.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// heldCtx is a context that ends with a lease (the lease's own, and
// Run's): Err consults the lease's clock as well as the inner context.
type heldCtx struct {
	context.Context // ends with the lease (and, for Run's, with the caller's)
	l               *Lease
	// caller is Run's caller's context, for its deadline; nil for the
	// lease's own
	caller context.Context
}

// Deadline is the lease's local deadline, or the caller's if earlier.
func (c *heldCtx) Deadline() (time.Time, bool) {
	d := c.l.Deadline()
	if c.caller != nil {
		if cd, ok := c.caller.Deadline(); ok && cd.Before(d) {
			return cd, true
		}
	}
	return d, true
}

// Err reports the lease's end from the instant its deadline passes.
func (c *heldCtx) Err() error {
	lerr := c.l.Err()
	var lost *LostError
	if errors.As(lerr, &lost) && lost.Reason == "deadline" {
		return context.DeadlineExceeded
	}
	if err := c.Context.Err(); err != nil {
		return err
	}
	if lerr != nil {
		return context.Canceled // the lease ended; the inner context follows
	}
	return nil
}

// end ends the lease with err, once.
func (l *Lease) end(err error) {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return
	}
	l.err = err
	if l.timer != nil {
		l.timer.Stop()
	}
	l.mu.Unlock()
	l.cancel(err)
	var lost *LostError
	if errors.As(err, &lost) {
		l.c.log.Warn("pg_lease: lease lost", "name", l.Name, "epoch", l.Epoch, "err", err)
	}
	l.c.mu.Lock()
	delete(l.c.held, l)
	if l.c.byName[l.Name] == l {
		delete(l.c.byName, l.Name)
	}
	l.c.mu.Unlock()
}

func (l *Lease) deadlinePassed() {
	l.end(&LostError{Name: l.Name, Epoch: l.Epoch, Reason: "deadline", Cause: l.lastErr()})
}

// lastErr says, for the deadline's error, why no renewal succeeded.
func (l *Lease) lastErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.lastRenewErr != nil:
		return l.lastRenewErr
	case !l.renewSent.IsZero():
		return fmt.Errorf("the renewal sent %v before the deadline had not answered", l.deadline.Sub(l.renewSent).Round(time.Millisecond))
	default:
		return errors.New("no renewal was sent (the process did not run, or ran late, while one was due)")
	}
}

// lostErr is the lease's end if it was not released by its holder: a
// *LostError, or ErrClosed.
func (l *Lease) lostErr() error {
	if err := l.Err(); err != nil && !errors.Is(err, ErrReleased) {
		return err
	}
	return nil
}

// armDeadline sets the timer that ends the lease at its deadline, once.
func (l *Lease) armDeadline() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer == nil && l.err == nil {
		l.timer = time.AfterFunc(time.Until(l.deadline), l.deadlinePassed)
	}
}

// keepAlive renews the lease, RenewEvery after the last renewal; after
// a failure it tries again sooner, until the deadline ends the lease.
// Only the server's not_owner, epoch_mismatch and lapsed end it at once.
// The client's renewal timer starts it in a goroutine of its own.
func (l *Lease) keepAlive() {
	l.renewing.Lock()
	defer l.renewing.Unlock()
	if l.Err() != nil {
		return
	}
	cfg := l.c.cfg
	sent := time.Now()
	l.mu.Lock()
	l.renewSent = sent
	l.mu.Unlock()
	var status string
	warned, err := l.c.keep.do(l.ctx, func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, renewSQL, l.Name, l.Owner, l.Epoch, cfg.TTL).Scan(&status)
	})
	l.mu.Lock()
	l.renewSent = time.Time{}
	l.mu.Unlock()
	switch {
	case err == nil && status == "ok" && !warned:
		l.renewed(sent)
		l.c.renewAt(l, time.Now().Add(cfg.RenewEvery))
	case err == nil && (status == "not_owner" || status == "epoch_mismatch" || status == "lapsed"):
		l.end(&LostError{Name: l.Name, Epoch: l.Epoch, Reason: status})
	default:
		// transient (or a renewal not known to be durable): again soon
		if err == nil {
			err = fmt.Errorf("renew returned %q", status)
			if warned {
				err = errors.New("renew drew the cancelled wait for synchronous replication")
			}
		}
		l.mu.Lock()
		l.lastRenewErr = err
		l.failures++
		first := l.failures == 1
		l.mu.Unlock()
		// the first failure of a run is a warning; the retries, debug
		level := slog.LevelDebug
		if first {
			level = slog.LevelWarn
		}
		l.c.log.Log(context.Background(), level, "pg_lease: renewal failed; retrying until the deadline", "name", l.Name, "epoch", l.Epoch, "deadline", time.Until(l.Deadline()), "err", err)
		l.c.renewAt(l, time.Now().Add(max(cfg.RenewEvery/4, 50*time.Millisecond)))
	}
}

// renewAt sets l's next renewal at t, unless l has ended.
func (c *Client) renewAt(l *Lease, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.held[l]; ok {
		c.renewAtLocked(l, t)
	}
}

// renewAtLocked sets l's next renewal at t, and the client's renewal
// timer to fire by then. One timer serves every lease of the client: a
// lease taken and released between two of its firings costs no timer
// of its own. c.mu is held.
func (c *Client) renewAtLocked(l *Lease, t time.Time) {
	l.next = t
	if !c.renewWhen.IsZero() && !t.Before(c.renewWhen) {
		return // it fires before t
	}
	c.renewWhen = t
	if c.renewTimer == nil {
		c.renewTimer = time.AfterFunc(time.Until(t), c.renewDue)
	} else {
		c.renewTimer.Reset(time.Until(t))
	}
}

// renewDue is the renewal timer's: it starts the renewal of every held
// lease that is due within RenewEvery/8 (a little early, so that the
// renewals of leases taken close together go in one firing, and the
// timer fires a few times per RenewEvery however many leases are held),
// each in a goroutine of its own after setting its deadline's timer, and
// sets the timer for the next renewal due.
func (c *Client) renewDue() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.renewWhen = time.Time{}
	if c.closed {
		return
	}
	horizon := time.Now().Add(c.cfg.RenewEvery / 8)
	var first time.Time
	for l := range c.held {
		switch {
		case l.next.IsZero(): // its renewal runs
		case !l.next.After(horizon):
			l.next = time.Time{}
			l.armDeadline()
			go l.keepAlive()
		case first.IsZero() || l.next.Before(first):
			first = l.next
		}
	}
	if !first.IsZero() {
		c.renewWhen = first
		c.renewTimer.Reset(time.Until(first))
	}
}

// waitRenewal returns once no renewal runs; after end, none starts.
func (l *Lease) waitRenewal() {
	l.renewing.Lock()
	l.renewing.Unlock() // a barrier: nothing to do inside
}

// renewed moves the deadline after a renewal sent at sent, unless the
// lease has ended meanwhile or its deadline passed before the answer
// came (the loss stands: Err may have reported it already).
func (l *Lease) renewed(sent time.Time) {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return
	}
	if !time.Now().Before(l.deadline) {
		l.mu.Unlock()
		l.deadlinePassed()
		return
	}
	l.deadline = sent.Add(l.c.cfg.TTL - l.c.cfg.Margin)
	l.lastRenewErr = nil
	if l.failures > 0 {
		l.c.log.Info("pg_lease: renewed again", "name", l.Name, "epoch", l.Epoch, "failed before", l.failures)
		l.failures = 0
	}
	if l.timer.Stop() {
		l.timer.Reset(time.Until(l.deadline))
	}
	l.mu.Unlock()
}

// Release ends the lease and releases it on the server, with its epoch,
// so that a retried release can never end a later holder's lease. It is
// idempotent: releasing a lease that is already released or lost returns
// nil. An error means the server could not be told; the lease then lapses
// after its TTL. Afterwards Err is ErrReleased, or the loss when the lease
// was lost before Release.
func (l *Lease) Release(ctx context.Context) error {
	return l.release(ctx, ErrReleased)
}

// release ends the lease with why and releases it on the server.
func (l *Lease) release(ctx context.Context, why error) error {
	l.end(why)
	l.waitRenewal()
	var err error
	for try := 0; try < 3; try++ {
		var status string
		_, err = l.c.calls.do(ctx, func(ctx context.Context, conn *pgx.Conn) error {
			return conn.QueryRow(ctx, releaseSQL, l.Name, l.Owner, l.Epoch).Scan(&status)
		})
		if err == nil {
			if l.c.log.Enabled(ctx, slog.LevelDebug) {
				l.c.log.Debug("pg_lease: released", "name", l.Name, "epoch", l.Epoch, "status", status)
			}
			return nil // ok, or no longer ours: either way released
		}
		if isPgError(err) || ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("lease %q: release: %w", l.Name, err)
}

// Guard fences a write: it calls lease.guard in the caller's transaction
// tx, which fails unless this lease is still held with its epoch, and
// holds the lease's row until tx ends, so that no other holder can take
// the lease before tx commits. A guard that finds the lease lost returns
// a *LostError; one that fails to serialize returns the server's 40001,
// which the caller retries with its transaction.
func (l *Lease) Guard(ctx context.Context, tx pgx.Tx) error {
	var until time.Time
	err := tx.QueryRow(ctx, guardSQL, l.Name, l.Owner, l.Epoch).Scan(&until)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "55000" {
		return &LostError{Name: l.Name, Epoch: l.Epoch, Reason: pe.Detail, Cause: err}
	}
	return err
}
