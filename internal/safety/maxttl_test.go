package safety

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
)

// lowered runs, in a database of pg_lease version, what finding 2 of
// 0.5.1's review did: a session's plans made, a REPEATABLE READ
// transaction of it begun, the maximum lowered from 20 s to 4 s by another
// session, and then calls with a ttl of 20 s: in that transaction, and in
// the session's next ones. It returns what each call gave: the span its
// answer lets the holder believe (expires_at - clock_timestamp()), or the
// error's SQLSTATE.
func lowered(t *testing.T, srv *pgserver.Server, db, version string) map[string]string {
	t.Helper()
	ctx := context.Background()
	databaseAt(t, srv, db, version, "SELECT lease.set_max_ttl(interval '20 seconds')")
	a, b := connect(t, srv.DSN(db)), connect(t, srv.DSN(db))
	var session, epoch int64
	if err := a.QueryRow(ctx, "SELECT session FROM lease.open_session('a', interval '20 seconds')").Scan(&session); err != nil {
		t.Fatal(err)
	}
	// plans made (the first five of a statement are custom; then generic)
	for i := 0; i < 7; i++ {
		if err := a.QueryRow(ctx, fmt.Sprintf("SELECT epoch FROM lease.acquire('warm%d', 'a', interval '20 seconds')", i)).Scan(&epoch); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Exec(ctx, fmt.Sprintf("SELECT * FROM lease.renew('warm%d', 'a', %d, interval '20 seconds')", i, epoch)); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Exec(ctx, fmt.Sprintf("SELECT * FROM lease.keep_alive(%d, 'a')", session)); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Exec(ctx, "SELECT * FROM lease.open_session('a', interval '20 seconds')"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Exec(ctx, "SELECT lease.set_max_ttl(interval '4 seconds')"); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	call := func(key, sql string) {
		var span time.Duration
		err := a.QueryRow(ctx, "SELECT c.expires_at - clock_timestamp() FROM ("+sql+") AS c").Scan(&span)
		var pe *pgconn.PgError
		switch {
		case err == nil:
			got[key] = span.Round(time.Second).String()
		case errors.As(err, &pe):
			got[key] = pe.Code
		default:
			t.Fatalf("%s: %v", sql, err)
		}
	}
	call("acquire in the older transaction", "SELECT expires_at FROM lease.acquire('x', 'a', interval '20 seconds')")
	a.Exec(ctx, "ROLLBACK")
	call("acquire", "SELECT expires_at FROM lease.acquire('y', 'a', interval '20 seconds')")
	call("renew", fmt.Sprintf("SELECT expires_at FROM lease.renew('warm6', 'a', %d, interval '20 seconds')", epoch))
	call("open_session", "SELECT expires_at FROM lease.open_session('a', interval '20 seconds')")
	call("keep_alive", fmt.Sprintf("SELECT expires_at FROM lease.keep_alive(%d, 'a')", session))
	return got
}

// TestLoweredMaximumReachesEveryPlan: once set_max_ttl() has lowered the
// maximum, no call grants, renews or keeps alive past it, whatever plans
// and snapshot its session has: each call refuses a ttl of 20 s with
// 22023, or (a call whose check ran on a plan made before the change, and
// whose write waited for it) grants it for the new maximum, and says so.
// 0.5.0, the broken variant, folded the old maximum into the plans it made
// again under the older snapshot, and kept granting at 20 s.
func TestLoweredMaximumReachesEveryPlan(t *testing.T) {
	srv, _ := server(t)
	got := lowered(t, srv, "lowered_new", model.PgLease.Version())
	for k, v := range got {
		if d, err := time.ParseDuration(v); v != "22023" && (err != nil || d > 4*time.Second) {
			t.Errorf("%s after the maximum was lowered to 4 s: %s with a ttl of 20 s, want 22023 (ttl is longer than max_ttl()) or at most 4s", model.PgLease.Version(), k)
		}
	}
	t.Logf("%s: %v", model.PgLease.Version(), got)
	old := lowered(t, srv, "lowered_old", "0.5.0")
	t.Logf("0.5.0: %v", old)
	// (0.5.0's later transactions refused it here; the review saw them
	// grant too, with another interleaving)
	if old["acquire in the older transaction"] != "20s" {
		t.Errorf("0.5.0 refused the 20 s acquire after the lowering (%v): the test proves nothing", old)
	}
}

// graceAfter is the length of the grace that new_era() begins in a
// database of version after the maximum is lowered from 20 s to 2 s, the
// lease table showing nothing: one name lapsed and purged (its renewal may
// have been lost in a crash not yet noticed), and one granted by a
// transaction not yet committed when set_max_ttl() was called.
func graceAfter(t *testing.T, srv *pgserver.Server, db, version string, inFlight bool) time.Duration {
	t.Helper()
	ctx := context.Background()
	databaseAt(t, srv, db, version,
		"SELECT lease.set_max_ttl(interval '20 seconds')",
		"SELECT * FROM lease.acquire('lapsed', 'a', interval '1 millisecond')",
		"SELECT pg_sleep(0.01)", "SELECT lease.purge()")
	var holder pgx.Tx
	if inFlight {
		c := connect(t, srv.DSN(db))
		var err error
		if holder, err = c.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := holder.Exec(ctx, "SELECT * FROM lease.acquire('fresh', 'b', interval '20 seconds')"); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- pgserver.Exec(ctx, srv.DSN(db), "SELECT lease.set_max_ttl(interval '2 seconds')") }()
	if inFlight {
		// the grant commits once set_max_ttl() has begun: 0.5.1's waits
		// for its lock (seen waiting), 0.5.0's returns without waiting
		waitLocked(t, connect(t, srv.DSN(db)), "set_max_ttl", done)
		if err := holder.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var grace float64
	c := connect(t, srv.DSN(db))
	if _, err := c.Exec(ctx, "SELECT * FROM lease.new_era()"); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, "SELECT extract(epoch FROM lease.grace() - clock_timestamp())::float8").Scan(&grace); err != nil {
		t.Fatal(err)
	}
	return time.Duration(grace * float64(time.Second))
}

// TestLoweredMaximumKeepsTheGrace: a maximum lowered from 20 s keeps the
// grace at 20 s until every lease it allowed has run out, whatever the
// table showed: a lapsed row only, or a grant in flight. 0.5.0 (the broken
// variant) shortened it to 2 s in both.
func TestLoweredMaximumKeepsTheGrace(t *testing.T) {
	srv, _ := server(t)
	for _, inFlight := range []bool{false, true} {
		name := map[bool]string{false: "lapsed", true: "inflight"}[inFlight]
		g := graceAfter(t, srv, "keep_"+name+"_new", model.PgLease.Version(), inFlight)
		if g < 19*time.Second {
			t.Errorf("%s, %s: the grace after the lowering is %v; want the old maximum's 20 s", model.PgLease.Version(), name, g)
		}
		old := graceAfter(t, srv, "keep_"+name+"_old", "0.5.0", inFlight)
		t.Logf("%s: grace %v (0.5.0: %v)", name, g.Round(time.Millisecond), old.Round(time.Millisecond))
		if old > 5*time.Second {
			t.Errorf("0.5.0, %s: the grace was %v, not shortened: the test proves nothing", name, old)
		}
	}
}
