package clienttest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/lease"
)

// TestOneSessionPerClient: a client holds its names under one session of
// the server (one row of lease.sessions, its owner each lease's), which
// one keep-alive renews: after three keep-alive intervals, the session's
// expiry has moved and the names, which nothing else renewed, are held
// until it. Close closes the session: every name is free at once.
func TestOneSessionPerClient(t *testing.T) {
	srv := server(t)
	c, lg := client(t, srv, lease.Config{TTL: 2 * time.Second})
	ctx := context.Background()
	var held []*lease.Lease
	for _, name := range []string{"s1", "s2", "s3"} {
		l, err := c.Acquire(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	var sessions, names int
	queryRow(t, srv, "SELECT count(*), (SELECT count(*) FROM lease.leases WHERE session_id IS NOT NULL) FROM lease.sessions", nil, &sessions, &names)
	if sessions != 1 || names != 3 || held[0].Owner != held[2].Owner {
		t.Fatalf("%d sessions, %d names under one; owners %q and %q: want one session holding the three", sessions, names, held[0].Owner, held[2].Owner)
	}
	var opened time.Time
	queryRow(t, srv, "SELECT expires_at FROM lease.sessions", nil, &opened)
	time.Sleep(2500 * time.Millisecond) // three keep-alives (every 667 ms)
	var kept time.Time
	var rows int
	queryRow(t, srv, "SELECT expires_at, (SELECT count(*) FROM lease.list() l WHERE l.owner = s.owner AND l.expires_at = s.expires_at) FROM lease.sessions s", nil, &kept, &rows)
	for _, l := range held {
		if err := l.Err(); err != nil {
			t.Fatalf("%s lost: %v\n%s", l.Name, err, lg)
		}
	}
	if !kept.After(opened.Add(time.Second)) || rows != 3 {
		t.Fatalf("the session's expiry moved from %v to %v, %d names held until it: want it kept alive, the three names with it", opened, kept, rows)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	queryRow(t, srv, "SELECT count(*), (SELECT count(*) FROM lease.list()) FROM lease.sessions", nil, &sessions, &names)
	if sessions != 0 || names != 0 {
		t.Errorf("after Close: %d sessions, %d names held", sessions, names)
	}
}

// TestNamesCheckedWhenTheEraChanges: a grant made under the session and
// lost with the server's history while the session itself survives (an
// asynchronous failover or a restore taken between the session's opening
// and the grant; here the grant's row put back by hand, and a new era)
// is found by the first keep-alive after the era changed: that lease
// ends with reason "era", before its deadline, and the session's other
// name stays held.
func TestNamesCheckedWhenTheEraChanges(t *testing.T) {
	srv := server(t)
	c, lg := client(t, srv, lease.Config{TTL: 3 * time.Second})
	held := acquireAll(t, c, "kept", "lost")
	kept, lost := held[0], held[1]
	// what the server that took over has: the name free, in a new era
	exec(t, srv, "UPDATE lease.leases SET owner = NULL, expires_at = NULL, session_id = NULL WHERE name = 'lost'",
		"SELECT lease.new_era()")
	deadline := lost.Deadline()
	select {
	case <-lost.Done():
	case <-time.After(time.Until(deadline)):
		t.Fatalf("the lease whose grant the server lost is still believed at its deadline: its session's keep-alives went on unchecked\n%s", lg)
	}
	var le *lease.LostError
	if !errors.As(lost.Err(), &le) || le.Reason != "era" {
		t.Errorf("Err %v; want a *lease.LostError, era", lost.Err())
	}
	time.Sleep(1500 * time.Millisecond) // two more keep-alives
	if err := kept.Err(); err != nil || !kept.Deadline().After(deadline) {
		t.Errorf("the name the server still holds: Err %v, deadline %v after the other's: want it held, its deadline moved\n%s", err, kept.Deadline().Sub(deadline), lg)
	}
	if !strings.Contains(lg.String(), "names checked") || !strings.Contains(lg.String(), "why=era") {
		t.Errorf("the check is not in the log:\n%s", lg)
	}
}

// TestNamesCheckedWhenReleasedBehind: another session releases one of the
// client's names with the owner and epoch that inspect() shows (pg_lease
// 0.5.1 counts it in the session's keep-alive): that lease ends with
// reason "released" at the next keep-alive, long before its deadline, and
// the session's other name stays held. The client's own releases do not
// end anything.
func TestNamesCheckedWhenReleasedBehind(t *testing.T) {
	srv := server(t)
	c, lg := client(t, srv, lease.Config{TTL: 3 * time.Second})
	held := acquireAll(t, c, "kept", "gone", "mine")
	kept, gone, mine := held[0], held[1], held[2]
	if err := mine.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	// a keep-alive first (every second): its era check, which the
	// session's first grants call for, is done before the release
	time.Sleep(1500 * time.Millisecond)
	exec(t, srv, "SELECT lease.release('gone', i.owner, i.epoch) FROM lease.inspect('gone') AS i")
	released := time.Now()
	deadline := gone.Deadline()
	select {
	case <-gone.Done():
	case <-time.After(time.Until(deadline)):
		t.Fatalf("the lease another session released is still believed at its deadline: its keep-alives did not say\n%s", lg)
	}
	t.Logf("ended %v after the release, %v before its deadline", time.Since(released).Round(time.Millisecond), time.Until(deadline).Round(time.Millisecond))
	var le *lease.LostError
	if !errors.As(gone.Err(), &le) || le.Reason != "released" {
		t.Errorf("Err %v; want a *lease.LostError, released", gone.Err())
	}
	time.Sleep(1500 * time.Millisecond) // two more keep-alives
	if err := kept.Err(); err != nil {
		t.Errorf("the name still held: Err %v\n%s", err, lg)
	}
}

// TestFailedReleaseRetried: a Release that fails under a session (the
// server refuses it: a trigger) returns the error, and the client
// releases the name after the session's next keep-alive once the server
// takes it: it is not kept held by the session it was left under.
func TestFailedReleaseRetried(t *testing.T) {
	srv := server(t)
	exec(t, srv, `CREATE FUNCTION public.pglease_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.owner IS NULL AND NEW.name = 'left' THEN
        RAISE EXCEPTION 'release refused by the test';
    END IF;
    RETURN NEW;
END $$`, "CREATE TRIGGER pglease_refuse BEFORE UPDATE ON lease.leases FOR EACH ROW EXECUTE FUNCTION public.pglease_refuse()")
	// (a TTL whose CallTimeout, 1 s, a loaded machine's first calls meet)
	c, lg := client(t, srv, lease.Config{TTL: 6 * time.Second})
	ctx := context.Background()
	l, err := c.TryAcquire(ctx, "left")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err == nil || !strings.Contains(err.Error(), "tried again") {
		t.Fatalf("Release refused by the server returned %v; want its error, saying it is tried again", err)
	}
	time.Sleep(1500 * time.Millisecond) // keep-alives: the name stays the session's
	if r := inspect(t, srv, "left"); !r.held {
		t.Fatal("the refused release took effect: the test cannot tell")
	}
	exec(t, srv, "DROP TRIGGER pglease_refuse ON lease.leases")
	// (the release is tried again at the next keep-alive, every 2 s)
	end := time.Now().Add(8 * time.Second)
	for inspect(t, srv, "left").held {
		if time.Now().After(end) {
			t.Fatalf("the name is still held 8 s after the server took releases again: the session keeps it\n%s", lg)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// (the release commits before its reply reaches the client, which
	// logs it then: under load, after the test saw the name free)
	for end := time.Now().Add(5 * time.Second); !strings.Contains(lg.String(), "released after an earlier release failed"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the retried release is not in the log 5 s after the name was free:\n%s", lg)
		}
	}
}

// TestOneLeasePerEpoch: eight goroutines of one client take and release
// one name as fast as they can. Under one session the server gives the
// session's own name back with its epoch, so the client must keep its
// acquires and releases of a name apart: every lease it hands out must
// have an epoch no other lease it handed out had, and while one is held
// no other is.
func TestOneLeasePerEpoch(t *testing.T) {
	srv := server(t)
	c, lg := client(t, srv, lease.Config{TTL: 5 * time.Second})
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[int64]bool{}
	holding := 0
	var bad []string
	var wg sync.WaitGroup
	// 3 s, and on a loaded machine until 20 grants were made (a minute at
	// most)
	start := time.Now()
	grants := 0
	more := func() bool {
		mu.Lock()
		defer mu.Unlock()
		took := time.Since(start)
		return took < 3*time.Second || (grants < 20 && took < time.Minute)
	}
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for more() {
				l, err := c.TryAcquire(ctx, "one")
				if err != nil {
					continue
				}
				mu.Lock()
				grants++
				if seen[l.Epoch] {
					bad = append(bad, fmt.Sprintf("goroutine %d was handed epoch %d a second time", g, l.Epoch))
				}
				seen[l.Epoch] = true
				holding++
				if holding > 1 {
					bad = append(bad, fmt.Sprintf("goroutine %d holds epoch %d beside another lease of the name", g, l.Epoch))
				}
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				holding--
				mu.Unlock()
				if err := l.Release(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d of %d grants broke the rule; the first: %s\n%s", len(bad), grants, bad[0], lg)
	}
	if grants < 20 {
		t.Fatalf("only %d grants in %s: the test cannot tell", grants, time.Since(start).Round(time.Second))
	}
	t.Logf("%d grants, each epoch once", grants)
}

// TestKeepAliveNeedsNoStandby: a session's keep-alives commit without a
// flush or a wait for a synchronous standby (0.5.0's grace covers one
// lost in a crash or a failover), so a synchronous standby that stops
// answering costs the holders nothing: with synchronous_standby_names
// naming a standby that never comes, every commit at synchronous_commit
// on waits for ever, and the names stay held past their TTL, their
// session's expiry moving.
func TestKeepAliveNeedsNoStandby(t *testing.T) {
	srv := server(t)
	c, lg := client(t, srv, lease.Config{TTL: 2 * time.Second, CallTimeout: 500 * time.Millisecond})
	ctx := context.Background()
	var held []*lease.Lease
	for _, name := range []string{"k1", "k2"} {
		l, err := c.Acquire(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	// (undone before the client's Close, which waits for a standby)
	t.Cleanup(func() { setSystem(t, srv, "synchronous_standby_names", "") })
	// a commit at on now waits for the standby: shown on a write of the
	// test's own, seen waiting (SyncRep) and then cancelled (the commit
	// stands, with a warning)
	requireSyncStandby(t, srv, "nobody")
	var before time.Time
	queryRow(t, srv, "SELECT expires_at FROM lease.sessions", nil, &before)
	time.Sleep(3 * time.Second) // past the TTL: four keep-alives
	for _, l := range held {
		if err := l.Err(); err != nil {
			t.Fatalf("%s lost while the synchronous standby did not answer: %v\n%s", l.Name, err, lg)
		}
	}
	var after time.Time
	queryRow(t, srv, "SELECT expires_at FROM lease.sessions", nil, &after)
	if !after.After(before.Add(2 * time.Second)) {
		t.Fatalf("the session's expiry moved from %v to %v in 3 s: its keep-alives did not commit\n%s", before, after, lg)
	}
}

// TestLostReleaseUndone: a release that the server lost while the
// session survived (committed on a primary, not yet on the standby that
// took over; here its row put back by hand, and a new era) would leave
// the name held by the session for as long as its keep-alives go on. The
// first keep-alive after the era changed finds it, and the client
// releases it again.
func TestLostReleaseUndone(t *testing.T) {
	srv := server(t)
	c, lg := client(t, srv, lease.Config{TTL: 3 * time.Second})
	ctx := context.Background()
	held := acquireAll(t, c, "kept", "gone")
	kept, gone := held[0], held[1]
	exec(t, srv, "CREATE TABLE saved AS SELECT * FROM lease.leases WHERE name = 'gone'")
	if err := gone.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// what the server that took over has: the name still the session's,
	// at its epoch, in a new era
	exec(t, srv, "UPDATE lease.leases AS l SET owner = s.owner, expires_at = s.expires_at, session_id = s.session_id, epoch = s.epoch FROM saved AS s WHERE l.name = s.name",
		"SELECT lease.new_era()")
	if r := inspect(t, srv, "gone"); !r.held || *r.owner != kept.Owner {
		t.Fatalf("the lost release is not undone by hand: %+v", r)
	}
	for end := time.Now().Add(4 * time.Second); inspect(t, srv, "gone").held; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the name whose release was lost is still the session's 4 s (four keep-alives) after the era changed\n%s", lg)
		}
	}
	if err := kept.Err(); err != nil {
		t.Errorf("the session's other name: %v", err)
	}
}

// acquireAll takes each of names with c, failing the test on an error.
func acquireAll(t *testing.T, c *lease.Client, names ...string) []*lease.Lease {
	t.Helper()
	var held []*lease.Lease
	for _, name := range names {
		l, err := c.TryAcquire(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	return held
}

// TestGrantInFlightCheckedWithTheEra: finding 8. A grant sent before a
// check of the session's names (after the era changed) and answered after
// the check read them was never checked: with no later change of era, a
// grant the fault lost would be believed to its deadline. Here the grant
// is sent half a second before the keep-alive that checks, and its write
// waits (an advisory lock the test holds) until the check has logged. In
// the first round it commits: the look after its answer finds it, and it
// is held (a client that ends every such grant, safe but wrong, fails
// here: under a busy client every session's first grants after a restart
// ended so). In the second the write's trigger deletes the row before it
// commits, as a fault that lost the grant would: the lease must end with
// reason "era".
func TestGrantInFlightCheckedWithTheEra(t *testing.T) {
	srv := server(t)
	cfg := lease.Config{TTL: 12 * time.Second, RenewEvery: 3 * time.Second, CallTimeout: 3 * time.Second}
	c, lg := client(t, srv, cfg)
	ctx := context.Background()
	kept := acquireAll(t, c, "kept")[0]
	exec(t, srv, `CREATE FUNCTION public.inflight_wait() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.name LIKE 'inflight-%' THEN
        PERFORM pg_advisory_xact_lock(4242);
        IF TG_OP = 'UPDATE' AND NEW.name = 'inflight-lost' AND NEW.session_id IS NOT NULL THEN
            DELETE FROM lease.leases WHERE name = NEW.name;
        END IF;
    END IF;
    RETURN NEW;
END $$`, "CREATE TRIGGER inflight_wait AFTER INSERT OR UPDATE ON lease.leases FOR EACH ROW EXECUTE FUNCTION public.inflight_wait()")
	locker, err := pgx.Connect(ctx, srv.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)
	for _, lose := range []bool{false, true} {
		name := "inflight-kept"
		if lose {
			name = "inflight-lost"
		}
		if _, err := locker.Exec(ctx, "SELECT pg_advisory_lock(4242)"); err != nil {
			t.Fatal(err)
		}
		// the next keep-alive is RenewEvery after the last one's send,
		// which the deadline tells: send + TTL - Margin
		first := kept.Deadline()
		for !kept.Deadline().After(first) {
			time.Sleep(10 * time.Millisecond)
		}
		margin := cfg.TTL / 10
		next := kept.Deadline().Add(-(cfg.TTL - margin)).Add(cfg.RenewEvery)
		// a new era, and (as the regress tests do) its grace over: what
		// a promotion that kept the session and its names leaves
		exec(t, srv, "SELECT lease.new_era()", "UPDATE lease.era_now SET grace_until = clock_timestamp()")
		checks := strings.Count(lg.String(), "names checked")
		time.Sleep(time.Until(next.Add(-500 * time.Millisecond)))
		type result struct {
			l   *lease.Lease
			err error
		}
		done := make(chan result, 1)
		go func() {
			l, err := c.TryAcquire(ctx, name)
			done <- result{l, err}
		}()
		for end := time.Now().Add(2500 * time.Millisecond); strings.Count(lg.String(), "names checked") == checks; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s: no check of the session's names within 2.5 s of the new era's first keep-alive\n%s", name, lg)
			}
		}
		if _, err := locker.Exec(ctx, "SELECT pg_advisory_unlock(4242)"); err != nil {
			t.Fatal(err)
		}
		r := <-done
		var le *lease.LostError
		if !lose {
			if r.err == nil {
				r.err = r.l.Err()
			}
			if r.err != nil {
				t.Fatalf("%s: the grant committed after the check's read ended: %v; want it held\n%s", name, r.err, lg)
			}
			assertHeld(t, srv, name, r.l)
			r.l.Release(ctx)
			continue
		}
		switch {
		case r.err == nil && r.l.Err() == nil:
			t.Fatalf("%s: the grant in flight while the names were checked, lost, is believed (epoch %d): nothing checked it\n%s", name, r.l.Epoch, lg)
		case r.err != nil && !errors.As(r.err, &le):
			t.Fatalf("%s: TryAcquire: %v; want the grant, ended as lost\n%s", name, r.err, lg)
		case r.err == nil && !errors.As(r.l.Err(), &le):
			t.Fatalf("%s: the grant ended with %v; want a *lease.LostError\n%s", name, r.l.Err(), lg)
		}
		if le.Reason != "era" {
			t.Errorf("%s: lost with reason %q; want era", name, le.Reason)
		}
		if inspect(t, srv, name).held {
			t.Errorf("%s: held on the server", name)
		}
	}
	if err := kept.Err(); err != nil {
		t.Errorf("the session's other name: %v", err)
	}
}

// TestOneCheckAfterACleanRestart: finding 9. After a clean restart the
// server reports no era until a grant enters one; the session's first
// keep-alive then checks its names (they were granted before the
// restart), and the ones after it must not, while nothing was granted or
// released since that check: 0.5.0's client read the whole list on every
// keep-alive, on every client, for as long as nobody acquired. Five
// keep-alives after the restart, one check; then a release under the
// session, and the next keep-alive checks once more (a restart that again
// left no era may have lost that release).
func TestOneCheckAfterACleanRestart(t *testing.T) {
	srv := server(t)
	c, lg := client(t, srv, lease.Config{TTL: 3 * time.Second})
	ctx := context.Background()
	held := acquireAll(t, c, "a", "b")
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	checks := strings.Count(lg.String(), "names checked")
	renewals := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			before := held[0].Deadline()
			for !held[0].Deadline().After(before) {
				if err := held[0].Err(); err != nil {
					t.Fatalf("lost: %v\n%s", err, lg)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	renewals(5)
	if n := strings.Count(lg.String(), "names checked") - checks; n != 1 {
		t.Errorf("five keep-alives after a clean restart checked the session's names %d times; want 1\n%s", n, lg)
	}
	checks = strings.Count(lg.String(), "names checked")
	if err := held[1].Release(ctx); err != nil {
		t.Fatal(err)
	}
	renewals(2)
	if n := strings.Count(lg.String(), "names checked") - checks; n != 1 {
		t.Errorf("two keep-alives after a release under the session, the server still without an era, checked the names %d times; want 1\n%s", n, lg)
	}
}

// TestOldExtensionIsRefused: the client needs sessions (pg_lease 0.5.0);
// on an older extension the first acquire fails with an error that names
// the database's version and says how to update, and holds nothing.
func TestOldExtensionIsRefused(t *testing.T) {
	srv := server(t)
	exec(t, srv, "CREATE DATABASE old_ext")
	if err := pgserver.Exec(context.Background(), srv.DSN("old_ext"), "CREATE EXTENSION pg_lease VERSION '0.4.0'"); err != nil {
		t.Fatal(err)
	}
	c, err := lease.New(srv.DSN("old_ext"), lease.Config{TTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.TryAcquire(context.Background(), "old")
	if !errors.Is(err, lease.ErrOldExtension) || l != nil || !strings.Contains(err.Error(), "pg_lease 0.4.0") || !strings.Contains(err.Error(), "ALTER EXTENSION pg_lease UPDATE") {
		t.Fatalf("TryAcquire on pg_lease 0.4.0: %v, %v; want ErrOldExtension naming 0.4.0 and the update", l, err)
	}
	// Acquire does not wait on it
	actx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.Acquire(actx, "old"); !errors.Is(err, lease.ErrOldExtension) {
		t.Fatalf("Acquire on pg_lease 0.4.0: %v; want ErrOldExtension at once", err)
	}
	conn, err := pgx.Connect(context.Background(), srv.DSN("old_ext"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM lease.leases").Scan(&n); err != nil || n != 0 {
		t.Errorf("the refused acquire left %d rows (%v)", n, err)
	}
}
