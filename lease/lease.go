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

// Lease is a held lease. It is kept alive every Config.RenewEvery, with
// every other lease of its client, by one keep-alive of the client's
// session, until it is released or lost; its Context ends then.
type Lease struct {
	// Name is the resource's name.
	Name string
	// Owner is the owner this grant holds the lease under: the client's
	// Config.Owner and a suffix unique to the client's session.
	Owner string
	// Epoch is the fencing token: larger for every later holder of the
	// name. Compare epochs; never subtract them.
	Epoch int64

	c      *Client
	k      *keeper         // keeps it alive; its deadline is the lease's
	sent   time.Time       // when its grant was sent
	added  time.Time       // when its keeper took it (under the keeper's mu)
	ctx    context.Context // ends (Done, Cause) when the lease ends
	cancel context.CancelCauseFunc
	held   *heldCtx // Context: ctx, and Err that consults the clock

	mu  sync.Mutex
	err error // why it ended; nil while held
}

// holdUnder starts keeping a granted lease under k, the session it was
// granted under, whose grant was sent at sent.
func (c *Client) holdUnder(k *keeper, name string, epoch int64, sent time.Time) *Lease {
	l := &Lease{Name: name, Owner: k.owner, Epoch: epoch, c: c, k: k, sent: sent}
	l.ctx, l.cancel = context.WithCancelCause(context.Background())
	l.held = &heldCtx{Context: l.ctx, l: l}
	c.mu.Lock()
	closed := c.closed
	c.held[l] = struct{}{}
	c.byName[name] = l
	c.mu.Unlock()
	k.add(l)
	if c.log.Enabled(context.Background(), slog.LevelDebug) {
		c.log.Debug("pg_lease: acquired", "name", name, "epoch", epoch, "session", k.session)
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
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if l.k.passed() {
		l.k.deadlinePassed()
	}
	// (its keeper may be ending its leases in another goroutine, the
	// deadline's timer's: this one is ended now)
	if lost := l.k.lostFor(l); lost != nil {
		l.end(lost)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Deadline is the local deadline: the lease counts as lost then unless a
// renewal (the session's keep-alive) succeeds first.
func (l *Lease) Deadline() time.Time { return l.k.Deadline() }

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

// hasEnded says whether end has run (Err also ends a lease whose deadline
// passed; this only reads, and so may be called holding the client's
// mutex).
func (l *Lease) hasEnded() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err != nil
}

// end ends the lease with err, once.
func (l *Lease) end(err error) {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return
	}
	l.err = err
	l.mu.Unlock()
	l.cancel(err)
	var lost *LostError
	if errors.As(err, &lost) {
		// (a session's loss is logged once, for all its names)
		l.c.log.Log(context.Background(), slog.LevelDebug, "pg_lease: lease lost", "name", l.Name, "epoch", l.Epoch, "err", err)
	}
	l.c.mu.Lock()
	delete(l.c.held, l)
	if l.c.byName[l.Name] == l {
		delete(l.c.byName, l.Name)
	}
	l.c.mu.Unlock()
	l.k.remove(l)
}

// lostErr is the lease's end if it was not released by its holder: a
// *LostError, or ErrClosed.
func (l *Lease) lostErr() error {
	if err := l.Err(); err != nil && !errors.Is(err, ErrReleased) {
		return err
	}
	return nil
}

// Release ends the lease and releases it on the server, with its epoch,
// so that a retried release can never end a later holder's lease. It is
// idempotent: releasing a lease that is already released or lost returns
// nil. An error means the server could not be told: the lease is
// released after the session's next keep-alive that can (or when the
// session ends). Afterwards Err is ErrReleased, or the loss when the lease was lost
// before Release.
func (l *Lease) Release(ctx context.Context) error {
	return l.release(ctx, ErrReleased)
}

// release ends the lease with why and releases it on the server.
func (l *Lease) release(ctx context.Context, why error) error {
	// no acquire of the name by this client until the release is done
	// (or left over): the session would give it this epoch again
	l.c.mu.Lock()
	for l.c.acquiring[l.Name] {
		l.c.mu.Unlock()
		time.Sleep(time.Millisecond) // an acquire that started before this lease ended
		l.c.mu.Lock()
	}
	l.c.acquiring[l.Name] = true
	l.c.mu.Unlock()
	defer func() {
		l.c.mu.Lock()
		delete(l.c.acquiring, l.Name)
		l.c.mu.Unlock()
	}()
	l.end(why)
	l.k.touch(time.Now())
	var err error
	for try := 0; try < 3; try++ {
		var status string
		status, err = l.c.releaseCall(ctx, l.Name, l.Owner, l.Epoch)
		if err == nil && status == "ok" {
			l.k.released.Add(1) // (the session's count on the server grew by it)
		}
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
	if !l.k.ended() {
		// the session's keep-alives would keep the name held: released
		// after the next one that succeeds
		l.c.leaveOver(leftover{k: l.k, name: l.Name, epoch: l.Epoch})
		return fmt.Errorf("lease %q: release: %w (tried again after each keep-alive of the session)", l.Name, err)
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
