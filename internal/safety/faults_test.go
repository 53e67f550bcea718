package safety

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pglease/pglease-gen/internal/leaseclient"
	"github.com/pglease/pglease-gen/internal/stress"
)

// faultRun runs the stress workload while inject injects faults, then
// checks the history; it returns what inject reported.
func faultRun(t *testing.T, dsn string, d time.Duration, inject func(ctx context.Context, rng *rand.Rand) (string, error)) {
	t.Helper()
	cfg := stress.Config{DSN: dsn, Clients: 6, Names: 3, Duration: d, Seed: 7, Reconnect: true}.Defaults()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var faults []string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(1, 2))
		time.Sleep(300 * time.Millisecond)
		for ctx.Err() == nil {
			what, err := inject(ctx, rng)
			if err != nil && ctx.Err() == nil {
				t.Errorf("inject: %v", err)
				return
			}
			if what != "" {
				faults = append(faults, what)
			}
		}
	}()
	ops, err := stress.Run(context.Background(), cfg)
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	final, err := stress.Table(context.Background(), dsn, cfg.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	vs := stress.Check(ops, final)
	unknown := 0
	for _, o := range ops {
		if o.Unknown {
			unknown++
		}
	}
	t.Logf("%d faults (%s), %d operations, %d with unknown outcome, %d violations", len(faults), summarize(faults), len(ops), unknown, len(vs))
	for _, v := range vs[:min(len(vs), 5)] {
		t.Error(v)
	}
	if len(faults) == 0 || unknown == 0 {
		t.Errorf("no fault reached a call (%d faults, %d unknown outcomes): the test proves nothing", len(faults), unknown)
	}
}

func summarize(faults []string) string {
	n := map[string]int{}
	for _, f := range faults {
		n[f]++
	}
	return fmt.Sprint(n)
}

// backends returns the client backends of a database (not this session).
func backends(ctx context.Context, admin *pgx.Conn, db string) ([]int, error) {
	rows, err := admin.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'", db)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

func TestTerminatedBackends(t *testing.T) {
	srv, _ := server(t)
	dsn := database(t, srv, "terminate", "pg_lease")
	admin := connect(t, srv.DSN("postgres"))
	faultRun(t, dsn, 6*time.Second, func(ctx context.Context, rng *rand.Rand) (string, error) {
		time.Sleep(time.Duration(50+rng.IntN(150)) * time.Millisecond)
		pids, err := backends(ctx, admin, "terminate")
		if err != nil || len(pids) == 0 {
			return "", err
		}
		// prefer a backend in the middle of a call, a blocking wait among them
		var busy []int
		rows, err := admin.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = 'terminate' AND state = 'active' AND pid <> pg_backend_pid()")
		if err == nil {
			busy, _ = pgx.CollectRows(rows, pgx.RowTo[int])
		}
		if len(busy) > 0 {
			pids = busy
		}
		_, err = admin.Exec(ctx, "SELECT pg_terminate_backend($1)", pids[rng.IntN(len(pids))])
		return "pg_terminate_backend", err
	})
}

func TestKilledBackends(t *testing.T) {
	srv, _ := server(t)
	dsn := database(t, srv, "kill9", "pg_lease")
	var admin *pgx.Conn
	faultRun(t, dsn, 8*time.Second, func(ctx context.Context, rng *rand.Rand) (string, error) {
		time.Sleep(time.Duration(700+rng.IntN(600)) * time.Millisecond)
		var err error
		if admin == nil || admin.IsClosed() {
			// the whole cluster restarts after a backend is killed
			if admin, err = pgx.Connect(ctx, srv.DSN("postgres")); err != nil {
				return "", nil // not back yet
			}
		}
		rows, err := admin.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = 'kill9' AND state = 'active'")
		if err != nil {
			admin = nil
			return "", nil
		}
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil || len(pids) == 0 {
			return "", nil
		}
		if err := syscall.Kill(pids[rng.IntN(len(pids))], syscall.SIGKILL); err != nil {
			return "", err
		}
		admin.Close(ctx)
		admin = nil
		return "kill -9 of a backend (cluster restart)", nil
	})
}

func TestImmediateShutdown(t *testing.T) {
	srv, _ := server(t)
	dsn := database(t, srv, "crash", "pg_lease")
	faultRun(t, dsn, 8*time.Second, func(ctx context.Context, rng *rand.Rand) (string, error) {
		time.Sleep(time.Duration(1000+rng.IntN(1000)) * time.Millisecond)
		if ctx.Err() != nil {
			return "", nil
		}
		if err := srv.Crash(context.Background()); err != nil {
			return "", err
		}
		time.Sleep(200 * time.Millisecond)
		return "pg_ctl stop -m immediate, then start", srv.Restart(context.Background())
	})
}

// A blocking wait cut short by statement_timeout or pg_cancel_backend ends
// with 57014 and leaves no state and no lock behind.
func TestCancelledWaitLeavesNothing(t *testing.T) {
	srv, _ := server(t)
	dsn := database(t, srv, "cancel", "pg_lease")
	ctx := context.Background()
	holder, waiter, admin := connect(t, dsn), connect(t, dsn), connect(t, dsn)
	g, err := leaseclient.Acquire(ctx, holder, "job", "holder", time.Hour, nil)
	if err != nil || !g.Acquired {
		t.Fatal(g, err)
	}
	epoch := *g.Epoch
	for _, how := range []string{"statement_timeout", "pg_cancel_backend"} {
		if _, err := waiter.Exec(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		// the canceller uses its own connection: a pgx connection serves one
		// caller at a time, and the wait can end (cancelled) before the
		// canceller's own call has returned
		cancelled := make(chan error, 1)
		if how == "statement_timeout" {
			waiter.Exec(ctx, "SET LOCAL statement_timeout = '300ms'")
			cancelled <- nil
		} else {
			var pid int
			waiter.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid)
			canceller := connect(t, dsn)
			go func() {
				time.Sleep(300 * time.Millisecond)
				_, err := canceller.Exec(ctx, "SELECT pg_cancel_backend($1)", pid)
				cancelled <- err
			}()
		}
		start := time.Now()
		_, err := leaseclient.Acquire(ctx, waiter, "job", "waiter", time.Minute, 30*time.Second)
		if cerr := <-cancelled; cerr != nil {
			t.Fatalf("pg_cancel_backend: %v", cerr)
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "57014" || time.Since(start) > 10*time.Second {
			t.Fatalf("%s: %v after %s; want 57014 soon", how, err, time.Since(start))
		}
		// the waiter's transaction is still open (aborted): it must hold no
		// lock that makes the holder wait
		if _, err := holder.Exec(ctx, "SET lock_timeout = '500ms'"); err != nil {
			t.Fatal(err)
		}
		if r, err := leaseclient.Renew(ctx, holder, "job", "holder", epoch, time.Hour); err != nil || r.Status != "ok" {
			t.Errorf("%s: the holder's renew while the waiter's transaction is open: %q %v", how, r.Status, err)
		}
		waiter.Exec(ctx, "ROLLBACK")
		if st, err := leaseclient.Inspect(ctx, admin, "job"); err != nil || st.Owner == nil || *st.Owner != "holder" {
			t.Errorf("%s: owner %v after the cancelled wait (%v)", how, st.Owner, err)
		}
	}
	var n int
	admin.QueryRow(ctx, "SELECT count(*) FROM lease.leases").Scan(&n)
	if n != 1 {
		t.Errorf("%d rows after cancelled waits; want 1", n)
	}

}

// pg_dump and pg_restore into a fresh database carry leases and epochs
// over; a released name continues from its epoch.
func TestDumpAndRestore(t *testing.T) {
	srv, inst := server(t)
	dsn := database(t, srv, "dumped", "pg_lease")
	mustExec(t, dsn,
		"SELECT lease.acquire('held', 'a', interval '1 hour')",
		"SELECT lease.acquire('released', 'a', interval '1 hour')",
		"SELECT lease.release('released', 'a', 1)",
		"SELECT lease.acquire('released', 'b', interval '1 hour')",
		"SELECT lease.release('released', 'b', 2)",
		"SELECT lease.acquire('lapsed', 'a', interval '1 millisecond')",
	)
	time.Sleep(10 * time.Millisecond)
	dump := filepath.Join(t.TempDir(), "dump")
	pgDump := filepath.Join(inst.BinDir, "pg_dump")
	out, err := exec.Command(pgDump, "-Fc", "-f", dump, "-h", srv.Socket(), "-p", fmt.Sprint(srv.Port), "-U", "postgres", "dumped").CombinedOutput()
	if err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	database(t, srv, "restored", "")
	out, err = exec.Command(filepath.Join(inst.BinDir, "pg_restore"), "--exit-on-error", "-d", "restored", "-h", srv.Socket(), "-p", fmt.Sprint(srv.Port), "-U", "postgres", dump).CombinedOutput()
	if err != nil {
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}
	state := func(dsn string) string {
		conn := connect(t, dsn)
		var s string
		if err := conn.QueryRow(context.Background(), "SELECT string_agg(format('%s:%s:%s:%s', name, held, owner, epoch), ' ' ORDER BY name) FROM (VALUES ('held'), ('released'), ('lapsed')) v(name), lease.inspect(v.name)").Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	restored := srv.DSN("restored")
	if a, b := state(dsn), state(restored); a != b {
		t.Fatalf("restored state differs:\n%s\n%s", a, b)
	} else {
		t.Logf("carried over: %s", b)
	}
	conn := connect(t, restored)
	ctx := context.Background()
	g1, err1 := leaseclient.Acquire(ctx, conn, "released", "c", time.Minute, nil)
	g2, err2 := leaseclient.Acquire(ctx, conn, "lapsed", "c", time.Minute, nil)
	// (0.4.0: the copy is another database, so its first grant enters a
	// new era, above every epoch of the source's: the source may still
	// grant; 0.3.0 went on in the source's band)
	if err := errors.Join(err1, err2); err != nil || g1.Epoch == nil || g2.Epoch == nil || *g1.Epoch <= 1<<32 || *g2.Epoch <= 1<<32 {
		t.Errorf("after restore: released name acquired as %+v, lapsed as %+v (want epochs of a new era, above 2^32): %v", g1, g2, err)
	}
	if g, err := leaseclient.Acquire(ctx, conn, "held", "c", time.Minute, nil); err != nil || g.Acquired {
		t.Errorf("after restore a held lease was acquired by another owner (%v)", err)
	}
}

// A connection lost inside an open transaction that had just acquired:
// rolled back, the lease is free again.
func TestConnectionLostInTransaction(t *testing.T) {
	srv, _ := server(t)
	dsn := database(t, srv, "lost", "pg_lease")
	ctx := context.Background()
	victim, admin := connect(t, dsn), connect(t, dsn)
	victim.Exec(ctx, "BEGIN")
	if g, err := leaseclient.Acquire(ctx, victim, "job", "victim", time.Hour, nil); err != nil || !g.Acquired {
		t.Fatal(g, err)
	}
	var pid int
	victim.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid)
	if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend($1, 5000)", pid); err != nil {
		t.Fatal(err)
	}
	if st, err := leaseclient.Inspect(ctx, admin, "job"); err != nil || st.Held || st.Epoch != nil {
		t.Errorf("after the lost connection: %+v %v; want an unknown name", st, err)
	}
	if g, err := leaseclient.Acquire(ctx, admin, "job", "next", time.Minute, nil); err != nil || !g.Acquired || *g.Epoch != 1 {
		t.Errorf("the next acquire: %+v %v; want epoch 1", g, err)
	}

}
