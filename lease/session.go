package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// keeper keeps leases alive and says until when they are held: the
// client's session (one keep-alive for every name under it).
type keeper struct {
	c *Client
	// session is the session's id and owner
	session int64
	owner   string
	// era is the server's era as the session's last keep-alive (or its
	// opening) reported it; touched only by them
	era *int64
	// released counts the session's names this client released (ok), or
	// the server's count once the names were checked: a keep-alive that
	// reports more means another session released one of them
	released atomic.Int64
	// ctx ends when the keeper does: it cancels a call in flight
	ctx    context.Context
	cancel context.CancelFunc
	// renewing is held while a renewal runs (in a goroutine of its own,
	// started by the client's renewal timer: a keeper has no goroutine
	// of its own between renewals)
	renewing sync.Mutex
	// next is when it is renewed next; zero while a renewal runs.
	// Guarded by the client's mu.
	next time.Time

	mu     sync.Mutex
	leases map[*Lease]struct{} // the held leases it keeps
	// lost is why it ended (its leases with it), nil while it lives;
	// closed says it ended by Close or Orphan
	lost   func(l *Lease) error
	closed bool
	// deadline is the local deadline (monotonic) of every lease it keeps
	deadline time.Time
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
	// looked is when the last check of the session's names (or the one
	// running) began to look at the server, and lookWhy why it looked: a
	// grant sent before that and added after it may have been in flight
	// while the look read the names, so add looks at it again
	looked  time.Time
	lookWhy string
	// touched is when the last grant or release under the session was
	// sent: while the server reports no era, a keep-alive checks the
	// names only when one was sent since the last look
	touched time.Time
}

// touch records a grant or a release under the session sent at sent.
func (k *keeper) touch(sent time.Time) {
	k.mu.Lock()
	if sent.After(k.touched) {
		k.touched = sent
	}
	k.mu.Unlock()
}

// touchedSinceLook says whether the names were never checked, or a grant
// or a release under the session was sent since the last look.
func (k *keeper) touchedSinceLook() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.looked.IsZero() || !k.touched.Before(k.looked)
}

// newKeeperLocked is a keeper whose grant (or session) was sent at sent; its
// first renewal is due RenewEvery after that. c.mu is held.
func (c *Client) newKeeperLocked(session int64, owner string, sent time.Time) *keeper {
	k := &keeper{c: c, session: session, owner: owner, leases: map[*Lease]struct{}{}}
	k.ctx, k.cancel = context.WithCancel(context.Background())
	k.deadline = sent.Add(c.cfg.TTL - c.cfg.Margin)
	c.keepers[k] = struct{}{}
	c.renewAtLocked(k, sent.Add(c.cfg.RenewEvery))
	return k
}

// add makes k keep l; a keeper that has ended ends l at once. A grant
// sent before a check of the session's names began to look, and answered
// after, was in flight while the check read the names: whether the fault
// that made the check lost it, or it committed after the check's read,
// only a look after its answer can tell, so add looks at its name (a
// failed look ends it: safe).
func (k *keeper) add(l *Lease) {
	k.mu.Lock()
	lost := k.lost
	recheck := false
	why := k.lookWhy
	if lost == nil {
		k.leases[l] = struct{}{}
		l.added = time.Now()
		if l.sent.After(k.touched) {
			k.touched = l.sent
		}
		recheck = !k.looked.IsZero() && l.sent.Before(k.looked)
	}
	k.mu.Unlock()
	if lost != nil {
		l.end(lost(l))
		return
	}
	if !recheck {
		return
	}
	st, err := k.c.inspect(context.Background(), l.Name)
	if err == nil && st.held && st.owner == k.owner && st.epoch == l.Epoch {
		k.c.log.Info("pg_lease: a grant in flight while the session's names were checked is held", "why", why, "name", l.Name, "epoch", l.Epoch)
		return
	}
	l.end(&LostError{Name: l.Name, Epoch: l.Epoch, Reason: why})
	if err == nil && st.held && st.owner == k.owner {
		k.c.leaveOver(leftover{k: k, name: l.Name, epoch: st.epoch})
	}
	k.c.log.Info("pg_lease: a grant in flight while the session's names were checked ended", "why", why, "name", l.Name, "epoch", l.Epoch, "look", err)
}

// remove stops keeping l (it ended).
func (k *keeper) remove(l *Lease) {
	k.mu.Lock()
	delete(k.leases, l)
	k.mu.Unlock()
}

// forget drops k from the client's renewals.
func (k *keeper) forget() {
	k.c.mu.Lock()
	delete(k.c.keepers, k)
	if k.c.session == k {
		k.c.session = nil
	}
	for name, lo := range k.c.leftovers {
		if lo.k == k {
			delete(k.c.leftovers, name) // lapse or released with it
		}
	}
	k.c.mu.Unlock()
}

// passed says the local deadline has passed, by the monotonic clock now.
func (k *keeper) passed() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lost == nil && !time.Now().Before(k.deadline)
}

// ended says k has ended.
func (k *keeper) ended() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lost != nil
}

// lostFor is why l ended with k, if k has ended.
func (k *keeper) lostFor(l *Lease) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lost == nil {
		return nil
	}
	return k.lost(l)
}

// Deadline is the local deadline of the leases k keeps.
func (k *keeper) Deadline() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.deadline
}

// lose ends k and every lease it keeps with the *LostError of reason
// (cause the renewal's error, for "deadline"), once. A session that the
// server may still keep is closed in the background, so that its names
// go to others at once and not at its TTL.
func (k *keeper) lose(reason string, cause error) {
	if !k.end(func(l *Lease) error {
		return &LostError{Name: l.Name, Epoch: l.Epoch, Reason: reason, Cause: cause}
	}, false) {
		return // ended already
	}
	k.c.log.Warn("pg_lease: session lost, and every lease under it", "session", k.session, "reason", reason, "err", cause)
	if reason == "deadline" {
		go k.closeSession()
	}
}

// end ends k and its leases with lost(lease), once; closed: by Close or
// Orphan. It reports whether this call ended it.
func (k *keeper) end(lost func(*Lease) error, closed bool) bool {
	k.mu.Lock()
	if k.lost != nil {
		k.mu.Unlock()
		return false
	}
	k.lost, k.closed = lost, closed
	if k.timer != nil {
		k.timer.Stop()
	}
	leases := make([]*Lease, 0, len(k.leases))
	for l := range k.leases {
		leases = append(leases, l)
	}
	k.mu.Unlock()
	k.cancel()
	k.forget()
	for _, l := range leases {
		l.end(lost(l))
	}
	return true
}

func (k *keeper) deadlinePassed() { k.lose("deadline", k.lastErr()) }

// lastErr says, for the deadline's error, why no renewal succeeded.
func (k *keeper) lastErr() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case k.lastRenewErr != nil:
		return k.lastRenewErr
	case !k.renewSent.IsZero():
		return fmt.Errorf("the renewal sent %v before the deadline had not answered", k.deadline.Sub(k.renewSent).Round(time.Millisecond))
	default:
		return errors.New("no renewal was sent (the process did not run, or ran late, while one was due)")
	}
}

// armDeadline sets the timer that ends the leases at the deadline, once.
func (k *keeper) armDeadline() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.timer == nil && k.lost == nil {
		k.timer = time.AfterFunc(time.Until(k.deadline), k.deadlinePassed)
	}
}

// what names what k keeps, for the log.
func (k *keeper) what() []any {
	k.mu.Lock()
	defer k.mu.Unlock()
	return []any{"session", k.session, "names", len(k.leases)}
}

// keepAlive renews what k keeps, RenewEvery after the last renewal;
// after a failure it tries again sooner, until the deadline ends it.
// Only the server's not_owner, epoch_mismatch and lapsed end it at once.
// The client's renewal timer starts it in a goroutine of its own.
func (k *keeper) keepAlive() {
	k.renewing.Lock()
	defer k.renewing.Unlock()
	if k.ended() {
		return
	}
	if k.passed() {
		k.deadlinePassed()
		return
	}
	cfg := k.c.cfg
	sent := time.Now()
	k.mu.Lock()
	k.renewSent = sent
	k.mu.Unlock()
	var status string
	var era, released *int64
	warned, err := k.c.keep.do(k.ctx, func(ctx context.Context, conn *pgx.Conn) error {
		var until *time.Time
		b := &pgx.Batch{}
		b.Queue(keepAliveOffSQL)
		b.Queue(keepAliveSQL, k.session, k.owner).QueryRow(func(r pgx.Row) error { return r.Scan(&status, &until, &era, &released) })
		return conn.SendBatch(ctx, b).Close()
	})
	if err == nil && status == "ok" && !warned && (!sameEra(era, k.era) || era == nil && k.touchedSinceLook()) {
		// a failover or a restore may have lost grants made under the
		// session, not the session itself: the names it no longer has end
		// before the deadline moves. (No era: the server has entered none
		// since it started, and every grant enters one, so its names were
		// granted before a restart or a promotion: checked once, and again
		// only after a grant or a release sent since, which a restart or
		// a promotion that again left no era may have lost.)
		if err = k.checkNames("era"); err == nil {
			k.era = era
		}
	}
	if err == nil && status == "ok" && !warned && released != nil && *released > k.released.Load() {
		// another session released names of this one (with their owner
		// and epoch): those end now, before the deadline moves
		if err = k.checkNames("released"); err == nil {
			k.released.Store(*released)
		}
	}
	k.mu.Lock()
	k.renewSent = time.Time{}
	k.mu.Unlock()
	if k.ended() {
		return // released, lost or closed meanwhile: nothing to report
	}
	switch {
	case err == nil && status == "ok" && !warned:
		k.renewed(sent)
		k.c.renewAt(k, time.Now().Add(cfg.RenewEvery))
		k.c.releaseLeftovers(k)
	case err == nil && (status == "not_owner" || status == "epoch_mismatch" || status == "lapsed"):
		k.lose(status, nil)
	default:
		// transient (or a renewal not known to be durable): again soon
		if err == nil {
			err = fmt.Errorf("renewal returned %q", status)
			if warned {
				err = errors.New("the renewal drew the cancelled wait for synchronous replication")
			}
		}
		k.mu.Lock()
		k.lastRenewErr = err
		k.failures++
		first := k.failures == 1
		deadline := k.deadline
		k.mu.Unlock()
		// the first failure of a run is a warning; the retries, debug
		level := slog.LevelDebug
		if first {
			level = slog.LevelWarn
		}
		k.c.log.Log(context.Background(), level, "pg_lease: renewal failed; retrying until the deadline",
			append(k.what(), "deadline", time.Until(deadline), "err", err)...)
		k.c.renewAt(k, time.Now().Add(max(cfg.RenewEvery/4, 50*time.Millisecond)))
	}
}

// held is the leases k keeps now.
func (k *keeper) held() []*Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	leases := make([]*Lease, 0, len(k.leases))
	for l := range k.leases {
		leases = append(leases, l)
	}
	return leases
}

func sameEra(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// checkNames ends the leases under session k that the server no longer
// holds under it with their epochs: the era changed, and a failover or a
// restore lost their grants. It checks every lease answered before its
// look at the server began (a grant sent after that went to the server
// that answered the look, or, were the old primary still taking writes,
// to a split brain, which no check can help); one sent before and
// answered after is add's to judge, by a look of its own.
// A name the session holds under another epoch (a restore to an earlier
// grant), or holds while the client does not (a lost release), is
// released after the next keep-alive.
func (k *keeper) checkNames(why string) error {
	looked := time.Now()
	// (a lease added from now on is judged by add, which looks again)
	k.mu.Lock()
	before, beforeWhy := k.looked, k.lookWhy
	k.looked, k.lookWhy = looked, why
	k.mu.Unlock()
	have := map[string]int64{}
	_, err := k.c.keep.do(k.ctx, func(ctx context.Context, conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, sessionNamesSQL, k.owner)
		if err != nil {
			return err
		}
		var name string
		var epoch int64
		_, err = pgx.ForEachRow(rows, []any{&name, &epoch}, func() error {
			have[name] = epoch
			return nil
		})
		return err
	})
	if err != nil {
		// (not looked: a keep-alive without an era looks again)
		k.mu.Lock()
		if k.looked.Equal(looked) {
			k.looked, k.lookWhy = before, beforeWhy
		}
		k.mu.Unlock()
		return fmt.Errorf("the session's names could not be checked (%s): %w", why, err)
	}
	// the leases added before the look began: answered before it, so a
	// grant the look lacks is not on the server that answered it
	k.mu.Lock()
	leases := make([]*Lease, 0, len(k.leases))
	for l := range k.leases {
		if l.added.Before(looked) {
			leases = append(leases, l)
		}
	}
	k.mu.Unlock()
	lost := 0
	for _, l := range leases {
		epoch, ok := have[l.Name]
		if ok && epoch == l.Epoch {
			continue
		}
		lost++
		l.end(&LostError{Name: l.Name, Epoch: l.Epoch, Reason: why})
		if ok {
			k.c.leaveOver(leftover{k: k, name: l.Name, epoch: epoch})
		}
	}
	// and a name the server holds under the session that the client does
	// not (a release the fault lost: the session's keep-alives would keep
	// it held for ever) is released after the next keep-alive, unless an
	// acquire or a release of it runs now
	undone := 0
	k.c.mu.Lock()
	for name, epoch := range have {
		if k.c.byName[name] == nil && !k.c.acquiring[name] {
			k.c.leaveOverLocked(leftover{k: k, name: name, epoch: epoch})
			undone++
		}
	}
	k.c.mu.Unlock()
	k.c.log.Info("pg_lease: the session's names checked", "why", why, "session", k.session, "names", len(leases), "lost", lost, "releases undone", undone)
	return nil
}

// renewed moves the deadline after a renewal sent at sent, unless k has
// ended meanwhile or its deadline passed before the answer came (the loss
// stands: Err may have reported it already).
func (k *keeper) renewed(sent time.Time) {
	k.mu.Lock()
	if k.lost != nil {
		k.mu.Unlock()
		return
	}
	if !time.Now().Before(k.deadline) {
		k.mu.Unlock()
		k.deadlinePassed()
		return
	}
	k.deadline = sent.Add(k.c.cfg.TTL - k.c.cfg.Margin)
	k.lastRenewErr = nil
	failed := k.failures
	k.failures = 0
	if k.timer.Stop() {
		k.timer.Reset(time.Until(k.deadline))
	}
	k.mu.Unlock()
	if failed > 0 {
		k.c.log.Info("pg_lease: renewed again", append(k.what(), "failed before", failed)...)
	}
}

// waitRenewal returns once no renewal runs; after end, none starts.
func (k *keeper) waitRenewal() {
	k.renewing.Lock()
	k.renewing.Unlock() // a barrier: nothing to do inside
}

// closeSession ends the session on the server: every name under it is
// released at once. Its error is the caller's to report.
func (k *keeper) closeSession() error {
	k.waitRenewal()
	ctx, cancel := context.WithTimeout(context.Background(), 2*k.c.cfg.CallTimeout)
	defer cancel()
	var err error
	for try := 0; try < 3; try++ {
		var status string
		var released int64
		_, err = k.c.calls.do(ctx, func(ctx context.Context, conn *pgx.Conn) error {
			return conn.QueryRow(ctx, closeSessionSQL, k.session, k.owner).Scan(&status, &released)
		})
		if err == nil {
			k.c.log.Debug("pg_lease: session closed", "session", k.session, "status", status, "released", released)
			return nil
		}
		if isPgError(err) || ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("lease: close session %d: %w (its names lapse with it, at its TTL)", k.session, err)
}

// sessionFor is the client's live session, opened if it has none. An
// extension without sessions (before 0.5.0) is an error that names its
// version.
func (c *Client) sessionFor(ctx context.Context) (*keeper, error) {
	c.opening.Lock()
	defer c.opening.Unlock()
	c.mu.Lock()
	k, closed := c.session, c.closed
	c.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if k != nil && !k.ended() && !k.passed() {
		return k, nil
	}
	owner := c.cfg.Owner + "#" + c.token + ".s" + strconv.FormatUint(c.seq.Add(1), 10)
	sent := time.Now()
	var id int64
	var until time.Time
	var era *int64
	warned, err := c.calls.do(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, openSessionSQL, owner, c.cfg.TTL).Scan(&id, &until, &era)
	})
	if isUndefinedFunction(err) {
		return nil, c.tooOld(ctx, err)
	}
	if err == nil && warned {
		// committed here, not known to be on the standbys: a server that
		// takes over without it answers its keep-alive with lapsed and its
		// acquires with an error, so it is as safe to use as any session
		c.log.Debug("pg_lease: opening the session drew the cancelled wait for synchronous replication", "session", id)
	}
	if err != nil {
		return nil, fmt.Errorf("open a session: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	k = c.newKeeperLocked(id, owner, sent)
	k.era = era
	c.session = k
	if c.log.Enabled(ctx, slog.LevelDebug) {
		c.log.Debug("pg_lease: session opened", "session", id, "owner", owner)
	}
	return k, nil
}

// releaseLeftovers retries the releases of names under session k that
// failed (Release returned an error): while the session lives, its
// keep-alives keep them held. It runs in a goroutine of its own, one at a
// time, so that a slow call never holds up the next keep-alive.
func (c *Client) releaseLeftovers(k *keeper) {
	c.mu.Lock()
	if len(c.leftovers) == 0 || c.leftoverRun {
		c.mu.Unlock()
		return
	}
	c.leftoverRun = true
	c.mu.Unlock()
	go func() {
		c.retryLeftovers(k)
		c.mu.Lock()
		c.leftoverRun = false
		c.mu.Unlock()
	}()
}

func (c *Client) retryLeftovers(k *keeper) {
	c.mu.Lock()
	var left []leftover
	for name, lo := range c.leftovers {
		if lo.k == k {
			left = append(left, leftover{k: k, name: name, epoch: lo.epoch})
		}
	}
	c.mu.Unlock()
	for _, lo := range left {
		// the name's own: no acquire or release of it by this client
		// meanwhile (one now: left for the next keep-alive; an acquire
		// releases it first itself)
		c.mu.Lock()
		busy := c.acquiring[lo.name] || c.byName[lo.name] != nil
		if !busy {
			c.acquiring[lo.name] = true
		}
		c.mu.Unlock()
		if busy {
			continue
		}
		err := c.releaseLeftover(k.ctx, lo)
		c.mu.Lock()
		delete(c.acquiring, lo.name)
		c.mu.Unlock()
		if err != nil {
			c.log.Debug("pg_lease: release failed again; retrying after the next keep-alive", "name", lo.name, "epoch", lo.epoch, "err", err)
			return
		}
	}
}

// leftover is a name whose release failed while its session lives.
type leftover struct {
	k     *keeper
	name  string
	epoch int64
}

// releaseLeftover releases lo on the server and forgets it.
func (c *Client) releaseLeftover(ctx context.Context, lo leftover) error {
	lo.k.touch(time.Now())
	status, err := c.releaseCall(ctx, lo.name, lo.k.owner, lo.epoch)
	if err != nil {
		return err
	}
	if status == "ok" {
		lo.k.released.Add(1)
	}
	c.mu.Lock()
	if cur, ok := c.leftovers[lo.name]; ok && cur.k == lo.k && cur.epoch == lo.epoch {
		delete(c.leftovers, lo.name)
	}
	c.mu.Unlock()
	c.log.Info("pg_lease: released after an earlier release failed", "name", lo.name, "epoch", lo.epoch, "status", status)
	return nil
}

// renewAt sets k's next renewal at t, unless k has ended.
func (c *Client) renewAt(k *keeper, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.keepers[k]; ok {
		c.renewAtLocked(k, t)
	}
}

// renewAtLocked sets k's next renewal at t, and the client's renewal
// timer to fire by then. One timer serves every keeper of the client: a
// lease of its own taken and released between two of its firings costs
// no timer of its own. c.mu is held.
func (c *Client) renewAtLocked(k *keeper, t time.Time) {
	k.next = t
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

// renewDue is the renewal timer's: it starts the renewal of every keeper
// that is due within RenewEvery/8 (a little early, so that the renewals
// of leases taken close together go in one firing, and the timer fires a
// few times per RenewEvery however many leases are held), each in a
// goroutine of its own after setting its deadline's timer, and sets the
// timer for the next renewal due.
func (c *Client) renewDue() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.renewWhen = time.Time{}
	if c.closed {
		return
	}
	horizon := time.Now().Add(c.cfg.RenewEvery / 8)
	var first time.Time
	for k := range c.keepers {
		switch {
		case k.next.IsZero(): // its renewal runs
		case !k.next.After(horizon):
			k.next = time.Time{}
			k.armDeadline()
			go k.keepAlive()
		case first.IsZero() || k.next.Before(first):
			first = k.next
		}
	}
	if !first.IsZero() {
		c.renewWhen = first
		c.renewTimer.Reset(time.Until(first))
	}
}

// leaveOver records a name left held under its session (its release
// failed, or a restore gave it back under another epoch), to be released
// after the next keep-alive; of two for one name, the newer epoch's.
func (c *Client) leaveOver(lo leftover) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leaveOverLocked(lo)
}

// leaveOverLocked is leaveOver with c.mu held.
func (c *Client) leaveOverLocked(lo leftover) {
	if cur, ok := c.leftovers[lo.name]; ok && cur.k == lo.k && cur.epoch > lo.epoch {
		return
	}
	c.leftovers[lo.name] = lo
}

// releaseCall is one lease.release of name at epoch on the calls'
// connection; its status is ok, or why the lease was no longer the
// owner's (released either way).
func (c *Client) releaseCall(ctx context.Context, name, owner string, epoch int64) (string, error) {
	var status string
	_, err := c.calls.do(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, releaseSQL, name, owner, epoch).Scan(&status)
	})
	return status, err
}

// tooOld is the error for an extension without sessions: it names the
// version the database has.
func (c *Client) tooOld(ctx context.Context, cause error) error {
	version, old := "before 0.5.0", true
	c.calls.do(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		// (compared as numbers: 0.10.0 is not before 0.5.0)
		var v string
		var before bool
		if conn.QueryRow(ctx, "SELECT extversion, string_to_array(extversion, '.')::int[] < '{0,5,0}' FROM pg_catalog.pg_extension WHERE extname = 'pg_lease'").Scan(&v, &before) == nil {
			version, old = v, before
		}
		return nil
	})
	if !old {
		return fmt.Errorf("open a session: %w", cause) // (another function is missing)
	}
	return fmt.Errorf("%w: this database has pg_lease %s, and this client needs 0.5.0 or later (sessions): update it with ALTER EXTENSION pg_lease UPDATE (%v)", ErrOldExtension, version, cause)
}
