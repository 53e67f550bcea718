// Package clienttest proves the Go client (module lease) against a real
// PostgreSQL with pg_lease: keep-alive, the lost-lease signal, hand-off by
// notification, unknown outcomes settled, fencing with Guard.
package clienttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/pgtest"
	"github.com/pglease/pglease-gen/internal/testenv"
	"github.com/pglease/pglease-gen/lease"
)

// server starts PostgreSQL with pg_lease created in database postgres.
func server(t *testing.T) *pgserver.Server {
	t.Helper()
	ctx := context.Background()
	var srv *pgserver.Server
	if *testenv.ClientMajor == 0 {
		srv, _ = pgtest.Local(t)
	} else {
		srv = pgtest.Pinned(t, *testenv.ClientMajor)
	}
	if err := pgserver.Exec(ctx, srv.DSN("postgres"), "CREATE EXTENSION pg_lease"); err != nil {
		t.Fatal(err)
	}
	return srv
}

// logs is a logger whose records a test can read.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.Write(p) }
func (l *logs) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

func client(t *testing.T, srv *pgserver.Server, cfg lease.Config) (*lease.Client, *logs) {
	t.Helper()
	return clientAt(t, srv.DSN("postgres"), cfg)
}

// clientAt is a client of connection string dsn that logs (at debug) into
// the logs it returns.
func clientAt(t *testing.T, dsn string, cfg lease.Config) (*lease.Client, *logs) {
	t.Helper()
	lg := &logs{}
	cfg.Logger = slog.New(slog.NewTextHandler(lg, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := lease.New(dsn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, lg
}

type row struct {
	held    bool
	owner   *string
	epoch   *int64
	expires *time.Time
}

func inspect(t *testing.T, srv *pgserver.Server, name string) row {
	t.Helper()
	var r row
	queryRow(t, srv, "SELECT held, owner, epoch, expires_at FROM lease.inspect($1)", []any{name}, &r.held, &r.owner, &r.epoch, &r.expires)
	return r
}

// queryRow runs one query on a connection of its own and scans its row.
func queryRow(t *testing.T, srv *pgserver.Server, sql string, args []any, dest ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, sql, args...).Scan(dest...); err != nil {
		t.Fatal(err)
	}
}

func exec(t *testing.T, srv *pgserver.Server, sqls ...string) {
	t.Helper()
	if err := pgserver.Exec(context.Background(), srv.DSN("postgres"), sqls...); err != nil {
		t.Fatal(err)
	}
}

// setSystem is pgserver's SetSystem (value "" resets the setting).
func setSystem(t *testing.T, srv *pgserver.Server, name, value string) {
	t.Helper()
	if err := srv.SetSystem(context.Background(), name, value); err != nil {
		t.Fatal(err)
	}
}

// requireSyncStandby is pgserver's RequireSyncStandby: from its return
// every commit at synchronous_commit = on waits for the standby named.
func requireSyncStandby(t *testing.T, srv *pgserver.Server, name string) {
	t.Helper()
	if err := srv.RequireSyncStandby(context.Background(), name); err != nil {
		t.Fatal(err)
	}
}

// slowWrites makes the writes to lease.leases on events ("INSERT", or
// "INSERT OR UPDATE") whose new row meets cond (SQL on NEW) take seconds
// longer: a trigger sleeps, as a slow disk or commit would.
func slowWrites(t *testing.T, srv *pgserver.Server, events, cond string, seconds float64) {
	t.Helper()
	slowTable(t, srv, "lease.leases", events, cond, seconds)
}

// slowTable is slowWrites on another table.
func slowTable(t *testing.T, srv *pgserver.Server, table, events, cond string, seconds float64) {
	t.Helper()
	n := slowTriggers.Add(1)
	exec(t, srv, fmt.Sprintf(`CREATE FUNCTION public.pglease_slow_%d() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF %s THEN
        PERFORM pg_sleep(%g);
    END IF;
    RETURN NEW;
END $$`, n, cond, seconds),
		fmt.Sprintf("CREATE TRIGGER pglease_slow_%d AFTER %s ON %s FOR EACH ROW EXECUTE FUNCTION public.pglease_slow_%d()", n, events, table, n))
}

// slowTriggers numbers slowWrites' triggers.
var slowTriggers atomic.Int64

// TestKeepAliveAndRelease: a lease with a 1 s TTL is still held, under
// its epoch, 2.5 s later; Release ends it everywhere, and again is a no-op.
func TestKeepAliveAndRelease(t *testing.T) {
	srv := server(t)
	c, _ := client(t, srv, lease.Config{TTL: time.Second})
	ctx := context.Background()
	l, err := c.Acquire(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	if err := l.Err(); err != nil {
		t.Fatalf("lost after 2.5 s of a 1 s TTL: %v", err)
	}
	if r := inspect(t, srv, "job"); !r.held || *r.owner != l.Owner || *r.epoch != l.Epoch {
		t.Fatalf("inspect: held %v by %v at %v; the lease is %s at %d", r.held, *r.owner, *r.epoch, l.Owner, l.Epoch)
	}
	// (a longer TTL than the holder's: its first call connects, and a
	// busy machine took more than a 1 s TTL's call timeout, 166 ms)
	other, _ := client(t, srv, lease.Config{TTL: 10 * time.Second})
	if _, err := other.TryAcquire(ctx, "job"); !errors.Is(err, lease.ErrNotAcquired) {
		t.Fatalf("another client's TryAcquire of a held name: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done not closed after Release")
	}
	if !errors.Is(l.Err(), lease.ErrReleased) || !errors.Is(context.Cause(l.Context()), lease.ErrReleased) {
		t.Errorf("Err %v, cause %v", l.Err(), context.Cause(l.Context()))
	}
	if r := inspect(t, srv, "job"); r.held {
		t.Error("still held on the server after Release")
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("a second Release: %v", err)
	}
	l2, err := c.TryAcquire(ctx, "job")
	if err != nil || l2.Epoch <= l.Epoch {
		t.Fatalf("the next holder: %v, epoch %d after %d", err, l2.Epoch, l.Epoch)
	}
	l2.Release(ctx)
}

// TestKeepAliveAcrossRestart: a lease with a 6 s TTL (renewed every 2 s)
// is held across a restart of its server that keeps the server down over
// a renewal: the renewal fails, the keep-alive tries again, and after the
// restart the lease is still held under its epoch on the server, its
// deadline moved past the one it had before.
func TestKeepAliveAcrossRestart(t *testing.T) {
	srv := server(t)
	c, lg := client(t, srv, lease.Config{TTL: 6 * time.Second})
	ctx := context.Background()
	l, err := c.TryAcquire(ctx, "restart")
	if err != nil {
		t.Fatal(err)
	}
	before := l.Deadline()
	time.Sleep(1500 * time.Millisecond)
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // down over the renewal due at 2 s
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(3 * time.Second); !l.Deadline().After(before) && l.Err() == nil && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	if err := l.Err(); err != nil {
		t.Fatalf("the lease was lost across the restart: %v\n%s", err, lg)
	}
	if !l.Deadline().After(before) {
		t.Fatalf("no renewal succeeded within 3 s of the restart\n%s", lg)
	}
	if !strings.Contains(lg.String(), "renewal failed; retrying") {
		t.Errorf("no renewal failed while the server was down: the restart did not cover one\n%s", lg)
	}
	// one warning for the run of failures, the retries at debug, and the
	// success after them at info
	failed, warned := 0, 0
	for _, line := range strings.Split(lg.String(), "\n") {
		if strings.Contains(line, "renewal failed; retrying") {
			failed++
			if strings.Contains(line, "level=WARN") {
				warned++
			}
		}
	}
	if warned != 1 || !strings.Contains(lg.String(), `level=INFO msg="pg_lease: renewed again"`) {
		t.Errorf("%d renewals failed, %d warned; want one warning for the run and an info when it ended\n%s", failed, warned, lg)
	}
	if r := inspect(t, srv, "restart"); !r.held || *r.owner != l.Owner || *r.epoch != l.Epoch {
		t.Errorf("inspect after the restart: held %v by %v at %v; the lease is %s at %d", r.held, r.owner, r.epoch, l.Owner, l.Epoch)
	}
	if err := l.Release(ctx); err != nil {
		t.Error(err)
	}
}

// TestHandOff: a waiter whose polling is 10 s apart gets the name
// within milliseconds of its release, by a client of this package or by
// plain SQL (the extension notifies the waiter, which watches the name);
// and does not when the row is freed without release() (so the
// notification is what made it fast).
func TestHandOff(t *testing.T) {
	srv := server(t)
	ctx := context.Background()
	holder, _ := client(t, srv, lease.Config{TTL: 30 * time.Second})
	waiter, _ := client(t, srv, lease.Config{TTL: 30 * time.Second, PollMin: 10 * time.Second, PollMax: 10 * time.Second})
	for _, how := range []string{"client", "sql", "unnotified"} {
		l, err := holder.Acquire(ctx, "handoff")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *lease.Lease, 1)
		wctx, cancel := context.WithCancel(ctx)
		go func() {
			w, err := waiter.Acquire(wctx, "handoff")
			if err != nil {
				w = nil
			}
			got <- w
		}()
		time.Sleep(500 * time.Millisecond) // the waiter tried once and waits
		released := time.Now()
		switch how {
		case "client":
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		case "sql":
			exec(t, srv, "SELECT lease.release('handoff', '"+l.Owner+"', "+itoa(l.Epoch)+")")
			l.Release(ctx) // already released: only stops the keep-alive
		case "unnotified":
			// what release() writes, without release(): nobody is told
			exec(t, srv, "UPDATE lease.leases SET owner = NULL, expires_at = NULL, epoch = epoch + 1, session_id = NULL WHERE name = 'handoff'")
			l.Release(ctx)
		}
		received := false
		select {
		case w := <-got:
			received = true
			took := time.Since(released)
			if how == "unnotified" {
				t.Fatalf("without a notification the waiter still got the name in %v: the test cannot tell", took)
			}
			if w == nil || w.Epoch <= l.Epoch {
				t.Fatalf("the waiter's lease %v", w)
			}
			t.Logf("hand-off after a release by %s: %v", how, took)
			w.Release(ctx)
		case <-time.After(1500 * time.Millisecond):
			if how != "unnotified" {
				t.Fatalf("the waiter did not get the name released by %s within 1.5 s", how)
			}
		}
		cancel()
		if !received {
			if w := <-got; w != nil {
				w.Release(ctx)
			}
		}
	}
	// nobody waits now: the waiter's watch ends (an advisory lock left
	// behind would make every later release of the name notify)
	deadline := time.Now().Add(5 * time.Second)
	for n := advisoryLocks(t, srv); n != 0; n = advisoryLocks(t, srv) {
		if time.Now().After(deadline) {
			t.Fatalf("%d watches are still in place 5 s after the last wait ended", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func advisoryLocks(t *testing.T, srv *pgserver.Server) int {
	t.Helper()
	var n int
	queryRow(t, srv, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'", nil, &n)
	return n
}

// TestBadNameKeepsWakes: a waiter for a name no lease can have (empty:
// lease.watch refuses it) does not stop the client's other waiters from
// being woken by a release.
func TestBadNameKeepsWakes(t *testing.T) {
	srv := server(t)
	ctx := context.Background()
	holder, _ := client(t, srv, lease.Config{TTL: 30 * time.Second})
	waiter, logs := client(t, srv, lease.Config{TTL: 30 * time.Second, PollMin: 10 * time.Second, PollMax: 10 * time.Second})
	bctx, bcancel := context.WithCancel(ctx)
	defer bcancel()
	go waiter.Acquire(bctx, "")
	l, err := holder.Acquire(ctx, "good")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		w, err := waiter.Acquire(ctx, "good")
		if err == nil {
			w.Release(ctx)
		}
		got <- err
	}()
	time.Sleep(500 * time.Millisecond)
	l.Release(ctx)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(1500 * time.Millisecond):
		t.Fatalf("the waiter for good was not woken within 1.5 s beside a waiter for an empty name:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "cannot watch the name") {
		t.Fatalf("the log does not say that the empty name is not watched:\n%s", logs)
	}
}

// TestLostWhenTakenOver: when the server gives the name to another owner
// (held on its own; under a session, once the session has lapsed), the
// next renewal (keep-alive) ends the lease at once with not_owner
// (lapsed); Run's function sees its context end with that cause, and
// Guard refuses; Run's release afterwards leaves the new owner's lease
// alone.
func TestLostWhenTakenOver(t *testing.T) {
	srv := server(t)
	c, _ := client(t, srv, lease.Config{TTL: 3 * time.Second})
	ctx := context.Background()
	err := c.Run(ctx, "taken", func(ctx context.Context, l *lease.Lease) error {
		conn, err := pgx.Connect(ctx, srv.DSN("postgres"))
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		if err := l.Guard(ctx, tx); err != nil {
			return err
		}
		tx.Rollback(ctx)
		start := time.Now()
		// under a session, the name is another's only once the session
		// has lapsed: its keep-alive says so
		exec(t, srv, "UPDATE lease.sessions SET expires_at = clock_timestamp() WHERE owner = '"+l.Owner+"'",
			"UPDATE lease.leases SET owner = 'thief', epoch = epoch + 1, session_id = NULL, expires_at = clock_timestamp() + interval '1 minute' WHERE name = 'taken'")
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the lease did not end within 5 s of the takeover")
		}
		if took := time.Since(start); took > 1500*time.Millisecond {
			t.Errorf("the loss took %v: more than a renewal interval (1 s) and a bit", took)
		}
		var lost *lease.LostError
		want := "lapsed"
		if !errors.As(context.Cause(ctx), &lost) || lost.Reason != want {
			t.Errorf("cause %v; want a *lease.LostError, %s", context.Cause(ctx), want)
		}
		tx, err = conn.Begin(context.Background())
		if err != nil {
			return err
		}
		defer tx.Rollback(context.Background())
		if err := l.Guard(context.Background(), tx); !errors.As(err, &lost) {
			t.Errorf("Guard after the takeover: %v", err)
		}
		return nil
	})
	var lost *lease.LostError
	if !errors.As(err, &lost) {
		t.Errorf("Run returned %v; want the loss", err)
	}
	// Run released after fn returned, with its epoch: the release, which
	// raced the takeover and lost, must leave the new holder's lease alone
	if r := inspect(t, srv, "taken"); !r.held || *r.owner != "thief" {
		t.Errorf("after the old holder's release: held %v by %v; want the thief's lease to stand", r.held, r.owner)
	}
}

// TestDeadlineWithoutServer: with the server gone no renewal succeeds,
// and the lease ends at its local deadline (the last renewal's send time +
// TTL - Margin), not later.
func TestDeadlineWithoutServer(t *testing.T) {
	srv := server(t)
	c, _ := client(t, srv, lease.Config{TTL: 2 * time.Second, Margin: 300 * time.Millisecond})
	l, err := c.Acquire(context.Background(), "gone")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond) // a renewal or two
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Restart(context.Background()) })
	deadline := l.Deadline()
	select {
	case <-l.Done():
	case <-time.After(4 * time.Second):
		t.Fatal("the lease did not end within 4 s of the server's shutdown")
	}
	late := time.Since(deadline)
	if late > 100*time.Millisecond {
		t.Errorf("the lease ended %v after its local deadline", late)
	}
	var lost *lease.LostError
	if !errors.As(l.Err(), &lost) || lost.Reason != "deadline" {
		t.Errorf("Err %v", l.Err())
	}
	t.Logf("ended %v after the deadline: %v", late, l.Err())
}

// TestCancelledWaitSettled: with a synchronous standby that never
// answers, an acquire's commit waits until the call times out; the client
// cancels it, the server returns the grant with the cancelled-wait
// warning, and the client settles it with lease.inspect (its log says so)
// before it hands out the epoch, which inspect shows it holds.
func TestCancelledWaitSettled(t *testing.T) {
	srv := server(t)
	requireSyncStandby(t, srv, "nobody")
	c, lg := client(t, srv, lease.Config{TTL: 4 * time.Second, CallTimeout: 300 * time.Millisecond})
	l, err := c.TryAcquire(context.Background(), "sync")
	if err != nil {
		t.Fatalf("TryAcquire: %v\n%s", err, lg)
	}
	if !strings.Contains(lg.String(), "an acquire with an unknown outcome was granted") {
		t.Errorf("the grant was not settled by inspect:\n%s", lg)
	}
	if r := inspect(t, srv, "sync"); !r.held || *r.owner != l.Owner || *r.epoch != l.Epoch {
		t.Errorf("inspect: %v %v %v; the lease %s %d", r.held, *r.owner, *r.epoch, l.Owner, l.Epoch)
	}
	setSystem(t, srv, "synchronous_standby_names", "")
	if err := l.Release(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestCallTimeout: a call that runs past CallTimeout is cancelled on the
// server CallTimeout after its own start. The client keeps one timer per
// connection, not one per call, so the test runs quick calls for 700 ms
// first: a 600 ms call after them must complete under a 1 s timeout (a
// timer that counted from the first quick call would cancel it), and a
// 3 s call is cancelled at 1 s with a *lease.TimeoutError, its grant
// rolled back. The same connection then serves the next call: the cancel
// request did not reach it. A Close while a 3 s call runs returns once
// that call is cancelled.
func TestCallTimeout(t *testing.T) {
	srv := server(t)
	slowWrites(t, srv, "INSERT", "NEW.name = 'slow'", 0.6)
	slowWrites(t, srv, "INSERT", "NEW.name = 'stuck'", 3)
	c, lg := client(t, srv, lease.Config{TTL: 4 * time.Second, CallTimeout: time.Second})
	ctx := context.Background()
	start := time.Now()
	quick := 0
	for ; time.Since(start) < 700*time.Millisecond; quick++ {
		l, err := c.TryAcquire(ctx, "quick")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sent := time.Now()
	l, err := c.TryAcquire(ctx, "slow")
	if err != nil {
		t.Fatalf("a 600 ms call, %v after the first of %d quick calls, failed under a 1 s timeout: %v\n%s", sent.Sub(start).Round(time.Millisecond), quick, err, lg)
	}
	t.Logf("a 600 ms call %v after the first of %d quick calls took %v", sent.Sub(start).Round(time.Millisecond), quick, time.Since(sent).Round(time.Millisecond))
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	sent = time.Now()
	_, err = c.TryAcquire(ctx, "stuck")
	took := time.Since(sent)
	var te *lease.TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a 3 s call under a 1 s timeout returned %v after %v; want a *lease.TimeoutError", err, took)
	}
	if took < time.Second || took > 2500*time.Millisecond {
		t.Errorf("the 3 s call returned after %v; want 1 s (and the cancel request's 100 ms)", took)
	}
	t.Logf("the 3 s call returned after %v: %v", took.Round(time.Millisecond), err)
	if r := inspect(t, srv, "stuck"); r.held {
		t.Errorf("the cancelled acquire's grant stands: held by %s", *r.owner)
	}
	l, err = c.TryAcquire(ctx, "quick")
	if err != nil {
		t.Fatalf("the call after the cancelled one: %v", err)
	}
	l.Release(ctx)
	// Close while a call runs: the call keeps its timeout, and Close
	// returns once the call is cancelled, not when its statement ends
	errc := make(chan error, 1)
	go func() {
		_, err := c.TryAcquire(ctx, "stuck")
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond)
	sent = time.Now()
	c.Close()
	if took := time.Since(sent); took > 2500*time.Millisecond {
		t.Errorf("Close during a call took %v: the call lost its timeout", took)
	} else {
		t.Logf("Close during a call took %v", took.Round(time.Millisecond))
	}
	if err := <-errc; !errors.As(err, &te) {
		t.Errorf("the call that Close waited for returned %v; want a *lease.TimeoutError", err)
	}
}

// TestManyLeasesKeptAlive: fifty leases taken 40 ms apart on one client,
// whose one renewal timer serves them all, are each renewed again and
// again: the test watches every lease's local deadline until each has
// moved later three times (a renewal each), failing if any lease is lost
// first, and then finds all held on the server under their epochs. It
// counts renewals, not how early they came: a TTL of 6 s (renewed every
// 2 s) leaves a starved process 3.4 s before a lease is lost, and no
// wall-clock bound ends the watch early (the test's own timeout does).
func TestManyLeasesKeptAlive(t *testing.T) {
	srv := server(t)
	c, lg := client(t, srv, lease.Config{TTL: 6 * time.Second})
	ctx := context.Background()
	var held []*lease.Lease
	for i := range 50 {
		l, err := c.TryAcquire(ctx, "many-"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
		time.Sleep(40 * time.Millisecond)
	}
	const want = 3
	last := make([]time.Time, len(held))
	renewed := make([]int, len(held))
	for i, l := range held {
		last[i] = l.Deadline()
	}
	for done := 0; done < len(held); time.Sleep(20 * time.Millisecond) {
		done = 0
		for i, l := range held {
			if err := l.Err(); err != nil {
				t.Fatalf("lease %s lost after %d renewals: its renewal was late (%v)\n%s", l.Name, renewed[i], err, lg)
			}
			if d := l.Deadline(); d.After(last[i]) {
				last[i] = d
				renewed[i]++
			}
			if renewed[i] >= want {
				done++
			}
		}
	}
	t.Logf("every lease was renewed %d times", want)
	names := make([]string, len(held))
	owners := make([]string, len(held))
	epochs := make([]int64, len(held))
	for i, l := range held {
		names[i], owners[i], epochs[i] = l.Name, l.Owner, l.Epoch
	}
	var n int
	queryRow(t, srv, `SELECT count(*) FROM unnest($1::text[], $2::text[], $3::bigint[]) AS h(name, owner, epoch)
		JOIN lease.list() l USING (name, owner, epoch)`, []any{names, owners, epochs}, &n)
	if n != len(held) {
		t.Errorf("%d of %d leases held on the server", n, len(held))
	}
	for _, l := range held {
		if err := l.Release(ctx); err != nil {
			t.Error(err)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestDeadlineFromSend: a lease's local deadline counts from when its
// grant was sent, so a reply that comes back late cannot move it past the
// server's expiry. A trigger holds acquire's reply up for 600 ms after
// the server computed expires_at (what a slow commit or a slow network
// does; longer than the 100 ms margin); the lease's Deadline must still
// come before the expires_at that lease.inspect shows (one machine: the
// server's clock and the client's are one).
func TestDeadlineFromSend(t *testing.T) {
	srv := server(t)
	// the lease's deadline is its session's: opening it and keeping it
	// alive are slow too (and the grant's move under the session, and a
	// release's count in the session's row, 0.5.1, are not: each call
	// stays within the call timeout)
	slowTable(t, srv, "lease.sessions", "INSERT OR UPDATE",
		"NEW.owner LIKE 'slow#%' AND (TG_OP = 'INSERT' OR NEW.expires_at IS DISTINCT FROM OLD.expires_at)", 0.6)
	slowWrites(t, srv, "INSERT", "NEW.owner LIKE 'slow#%'", 0.6)
	c, lg := client(t, srv, lease.Config{TTL: 3 * time.Second, Owner: "slow", CallTimeout: 900 * time.Millisecond})
	sent := time.Now()
	l, err := c.TryAcquire(context.Background(), "slow")
	if err != nil {
		t.Fatalf("TryAcquire: %v\n%s", err, lg)
	}
	took := time.Since(sent)
	// the deadline before the server's expiry is read: a keep-alive that
	// commits in between moves both, the expiry first (read in the other
	// order, under load, a keep-alive sent 0.7 s into the acquire moved
	// the deadline past the expiry read before it)
	deadline := l.Deadline()
	r := inspect(t, srv, "slow")
	if r.expires == nil {
		t.Fatalf("inspect shows no expiry: %+v", r)
	}
	if took < 600*time.Millisecond {
		t.Fatalf("the acquire took %v: the trigger did not hold its reply up", took)
	}
	if took < 1200*time.Millisecond {
		t.Fatalf("the acquire took %v: the triggers did not hold up both the session's opening and the grant", took)
	}
	if !deadline.Before(*r.expires) {
		t.Errorf("the lease's local deadline %v is not before the server's expiry %v (the acquire took %v): counted from the reply, not from the send",
			deadline.Format(time.RFC3339Nano), r.expires.Format(time.RFC3339Nano), took)
	}
	t.Logf("the acquire took %v; the local deadline is %v before the server's expiry", took.Round(time.Millisecond), r.expires.Sub(deadline).Round(time.Millisecond))
	if err := l.Release(context.Background()); err != nil {
		t.Error(err)
	}
}
