package safety

// TestHoldersNeverOverlap: the proof of 0.5.0's grace with one clock.
// Holder processes (this test binary again, each with its own Go client)
// take names, act while they believe they hold them and log, on the
// system-wide monotonic clock, when they start acting and when they stop
// (their lease's context ended, or just before they release). A fault
// strikes in the middle of the run; afterwards no two holders' intervals
// on one name may overlap. The same run with 0.4.0's behaviour (no
// maximum TTL, so no grace) and with 0.5.0 without its grace (renewals
// without a flush, and no grace) shows the overlaps the grace prevents.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/pgtest"
	"github.com/pglease/pglease-gen/internal/testenv"
	"github.com/pglease/pglease-gen/lease"
)

const (
	holderEnv = "PGLEASE_SAFETY_HOLDER"
	// a holder's TTL when a fault gives the holders TTLs of their own; it
	// then holds a name for up to as long (4 s at least)
	holderTTLEnv = "PGLEASE_SAFETY_TTL"
	// the holders' TTL, and the maximum the runs set: longer than a
	// restart takes, so that a holder the server forgot still acts when
	// the server is back
	holderTTL = 4 * time.Second
	holders   = 6
	names     = 4
)

// monotonic is CLOCK_MONOTONIC in nanoseconds: one clock for every
// process on the machine (Go's own monotonic reading is per process).
func monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// holderMain is a holder process: until its input closes it takes one of
// the names (TryAcquire, again and again while refused), acts on it for
// 50-300 ms or (three times in four) 1-4 s, checking its lease between
// steps of 2 ms, and
// releases it;
// it prints "start NAME EPOCH T" when Acquire returned and "end NAME EPOCH
// T" when it stops acting (T: monotonic ns), before a release.
func holderMain() int {
	// its TTL, and the longest it holds a name for (holderTTLEnv)
	ttl, longest := holderTTL, 4*time.Second
	if v := os.Getenv(holderTTLEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		ttl, longest = d, max(d, longest)
	}
	// (renewals far apart, as a client that renews at 3/4 of its TTL: a
	// holder the server forgot learns it late)
	c, err := lease.New(os.Getenv("PGLEASE_DSN"), lease.Config{TTL: ttl, Owner: os.Getenv(holderEnv),
		RenewEvery: min(ttl*3/4, ttl-ttl/10-500*time.Millisecond), CallTimeout: 500 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Orphan()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { io.Copy(io.Discard, os.Stdin); cancel() }()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for ctx.Err() == nil {
		name := fmt.Sprintf("n%d", rand.IntN(names))
		l, err := c.TryAcquire(ctx, name)
		if err != nil {
			time.Sleep(time.Duration(5+rand.IntN(20)) * time.Millisecond)
			continue
		}
		fmt.Fprintf(out, "start %s %d %d\n", name, l.Epoch, monotonic())
		// short holdings, and more long ones (renewed) that a fault
		// interrupts
		d := time.Duration(50+rand.IntN(250)) * time.Millisecond
		if rand.IntN(4) != 0 {
			d = time.Second + rand.N(longest-time.Second)
		}
		hold := time.Now().Add(d)
		for l.Err() == nil && time.Now().Before(hold) && ctx.Err() == nil {
			time.Sleep(2 * time.Millisecond)
		}
		fmt.Fprintf(out, "end %s %d %d\n", name, l.Epoch, monotonic())
		out.Flush()
		if l.Err() == nil {
			rctx, rcancel := context.WithTimeout(context.Background(), time.Second)
			l.Release(rctx)
			rcancel()
		}
	}
	return 0
}

type interval struct {
	holder, name string
	epoch        int64
	start, end   int64
}

// overlapVariant is the extension a run uses.
type overlapVariant struct {
	name string
	ext  string // the extension to create: pg_lease or a variant of the catalogue (variants_test.go)
	// version, when set, is the version created (one without a maximum:
	// max is not set)
	version string
	max     string // lease.set_max_ttl's argument
	// setup runs after CREATE EXTENSION, as the installer
	setup []string
	// safe: no two holders may overlap (a broken variant must)
	safe bool
}

var (
	overlapShipped = overlapVariant{name: model.PgLease.Version(), ext: "pg_lease", max: "interval '4 seconds'", safe: true}
	// fencing only, as 0.4.0 (the client needs sessions: the current
	// version without a maximum): no grace, renewals at the floor
	overlapFencing = overlapVariant{name: "no maximum TTL (no grace)", ext: "pg_lease", max: "NULL"}
	// 0.5.0 without its grace: renewals without a flush, and nothing
	// waits for the holders a fault made the server forget
	overlapNoGrace = overlapVariant{name: "0.5.0 without the grace", ext: "pg_lease_nograce", max: "interval '4 seconds'"}
	// 0.5.1 with a raise of the maximum that takes effect at once, as
	// 0.5.0's did
	overlapRaiseNow = overlapVariant{name: "0.5.1 raising the maximum at once", ext: "pg_lease_raisenow", safe: false}
)

// overlapFault is what strikes the run.
type overlapFault struct {
	name     string
	sample   bool   // in make test's share
	floor    string // lease.set_floor's argument
	standby  bool
	sync     bool             // the standby synchronous (synchronous_standby_names)
	server   []string         // settings the server starts with
	variants []overlapVariant // that overlap in it (the broken ones)
	// max, when set, is the maximum the run starts with (instead of the
	// variant's), and ttls the holders' TTLs, one each in turn (default
	// holderTTL)
	max  string
	ttls []time.Duration
	// sampleBroken: make test's share runs the broken variants too
	sampleBroken bool
	// strike: the fault; create is what made the holders' database (the
	// extension, its maximum and floor)
	strike func(t *testing.T, primary, standby *pgserver.Server, create []string)
}

var overlapFaults = []overlapFault{
	// (at the floor on only renewals are lost, and a holder whose renewal
	// was lost renews again when the server is back, before its last
	// durable expiry has passed, in every run we tried: no broken variant
	// overlaps reliably here; dev/grace.md)
	{name: "crash (floor on)", floor: "on",
		strike: func(t *testing.T, p, _ *pgserver.Server, _ []string) { pauseKillRestart(t, p) }},
	{name: "crash (floor session)", floor: "session", sample: true, variants: []overlapVariant{overlapFencing, overlapNoGrace},
		strike: func(t *testing.T, p, _ *pgserver.Server, _ []string) { pauseKillRestart(t, p) }},
	{name: "crash restart (a backend killed)", floor: "session", variants: []overlapVariant{overlapFencing, overlapNoGrace},
		strike: func(t *testing.T, p, _ *pgserver.Server, _ []string) {
			// kill -9 of one backend: the postmaster ends every other one
			// and recovers from the WAL, as after a crash. The WAL writer
			// held back for half a second before (and killed with the
			// backend, as a stopped process would hold the restart up),
			// so that the commits at off of that half second are lost:
			// without it, a run lost a grant whose holder still acted in
			// about one run of five (0.4.0 overlapped in none of 5 tries,
			// 2026-12-06)
			ctx := context.Background()
			conn := connect(t, p.DSN("postgres"))
			writer, err := p.PauseWALWriter(ctx)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
			var pid int
			if err := conn.QueryRow(ctx,
				"SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND datname = 'overlap' LIMIT 1").Scan(&pid); err != nil {
				t.Fatal(err)
			}
			for _, pid := range []int{pid, writer} {
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
		}},
	// (the maximum lowered from 8 s to 2 s, then the WAL writer held back
	// and the server killed: half the holders ask 8 s, whose renewals are
	// refused from the lowering on, and who act until their deadline; the
	// grace after the crash must count 8 s. No broken variant overlaps
	// here: set_max_ttl()'s flushed commit makes every grant and renewal
	// before it durable, and it waits for those in flight, so the server
	// after the crash knows every 8 s lease (TestLoweredMaximumKeepsTheGrace
	// shows the variants on the paths that skip that: a grant in flight,
	// and a lapsed name purged))
	{name: "maximum lowered, then a crash", floor: "session", sample: true, max: "interval '8 seconds'",
		ttls: []time.Duration{8 * time.Second, 2 * time.Second},
		strike: func(t *testing.T, p, _ *pgserver.Server, _ []string) {
			mustExec(t, p.DSN("overlap"), "SELECT lease.set_max_ttl(interval '2 seconds')")
			pauseKillRestart(t, p)
		}},
	// (the standby cut off, the maximum raised from 2 s to 16 s on the
	// primary, 2 s of traffic, then the primary killed and the standby,
	// which lacks the raise, promoted: half the holders ask 16 s, and so
	// keep their sessions alive every 12 s. With the raise's delay no
	// lease is granted under it before the failover; a raise at once
	// grants 16 s leases that the promoted server's grace of 2 s does not
	// wait for, whose holders learn their loss only at their next
	// keep-alive)
	{name: "maximum raised, then an asynchronous failover", floor: "on", standby: true, sample: true, sampleBroken: true,
		max: "interval '2 seconds'", ttls: []time.Duration{16 * time.Second, 2 * time.Second}, variants: []overlapVariant{overlapRaiseNow},
		strike: func(t *testing.T, p, s *pgserver.Server, _ []string) {
			ctx := context.Background()
			if err := s.CutReplication(ctx); err != nil {
				t.Fatal(err)
			}
			mustExec(t, p.DSN("overlap"), "SELECT lease.set_max_ttl(interval '16 seconds')")
			time.Sleep(2 * time.Second)
			if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := s.Promote(ctx); err != nil {
				t.Fatal(err)
			}
		}},
	// (the standby cut off 2 s before the primary is killed and promoted)
	{name: "asynchronous failover", floor: "on", standby: true, sample: true, variants: []overlapVariant{overlapFencing, overlapNoGrace},
		strike: func(t *testing.T, p, s *pgserver.Server, _ []string) {
			ctx := context.Background()
			if err := s.CutReplication(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Second)
			if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := s.Promote(ctx); err != nil {
				t.Fatal(err)
			}
		}},
	// (grants wait for the synchronous standby, which is cut off; what
	// a client's cancel request does to a waiting COMMIT, SIGINT to its
	// backend, returns it as a success with a warning: the holder holds a
	// grant the standby never got; 2 s of that, then the primary killed
	// and the standby promoted. 0.5.0 without the grace is not among the
	// broken variants: it overlapped in none of 10 runs, since the
	// releases in the window are lost too, and the name a lost grant took
	// stays its releaser's session's on the promoted server until that
	// client's era check releases it again, at about when the lost
	// grant's holder checks and learns its loss; dev/grace.md)
	{name: "failover with cancelled sync waits", floor: "on", standby: true, sync: true, variants: []overlapVariant{overlapFencing},
		strike: func(t *testing.T, p, s *pgserver.Server, _ []string) {
			ctx := context.Background()
			conn := connect(t, p.DSN("postgres"))
			if err := s.CutReplication(ctx); err != nil {
				t.Fatal(err)
			}
			cancelled := 0
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				var n int
				if err := conn.QueryRow(ctx, "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE wait_event = 'SyncRep'").Scan(&n); err != nil {
					t.Fatal(err)
				}
				cancelled += n
			}
			if cancelled == 0 {
				t.Fatal("no COMMIT waited for the synchronous standby in 2 s: nothing was cancelled")
			}
			if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := s.Promote(ctx); err != nil {
				t.Fatal(err)
			}
		}},
	// (a dump taken while the holders run, restored into a database of
	// another name while they go on for 1 s more (grants the dump lacks),
	// then DROP DATABASE ... WITH (FORCE) and the restored one renamed:
	// no holder connects to a half-restored database. The floor at on:
	// a dump does not carry the one set_floor sets. 0.4.0 is not among
	// the broken variants: its dump restores as the default version)
	{name: "restore in place", floor: "on", variants: []overlapVariant{overlapNoGrace},
		strike: func(t *testing.T, p, _ *pgserver.Server, _ []string) {
			ctx := context.Background()
			file := filepath.Join(p.Dir, "dump") // pg_dump runs as the server's user
			if err := p.Dump(ctx, "overlap", file); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := p.Restore(ctx, "overlap_restored", file); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second - time.Since(start))
			mustExec(t, p.DSN("postgres"), "DROP DATABASE overlap WITH (FORCE)", "ALTER DATABASE overlap_restored RENAME TO overlap")
		}},
	// (the same with lease.leases alone: its rows restored, with
	// pg_restore --data-only -t leases, into a database where pg_lease was
	// created afresh, its maximum and floor set: rows without their eras,
	// and without their sessions, whose holders then learn at their next
	// keep-alive that they lost them)
	{name: "table restored in place", floor: "on", variants: []overlapVariant{overlapNoGrace},
		strike: func(t *testing.T, p, _ *pgserver.Server, create []string) {
			ctx := context.Background()
			file := filepath.Join(p.Dir, "dump")
			if err := p.Dump(ctx, "overlap", file); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			mustExec(t, p.DSN("postgres"), "CREATE DATABASE overlap_rows")
			mustExec(t, p.DSN("overlap_rows"), create...)
			if err := p.RestoreTableData(ctx, "overlap_rows", file, "leases"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second - time.Since(start))
			mustExec(t, p.DSN("postgres"), "DROP DATABASE overlap WITH (FORCE)", "ALTER DATABASE overlap_rows RENAME TO overlap")
		}},
	// (the same with lease.leases alone replicated logically, to a
	// database of the same cluster where pg_lease was created afresh, its
	// maximum and floor set: the subscription streams for half a second,
	// is disabled, the holders go on for 1 s more (grants the subscriber
	// lacks), then the source is dropped and the subscriber renamed)
	{name: "table replicated logically", floor: "on", server: []string{"wal_level=logical"}, variants: []overlapVariant{overlapNoGrace},
		strike: func(t *testing.T, p, _ *pgserver.Server, create []string) {
			ctx := context.Background()
			mustExec(t, p.DSN("postgres"), "CREATE DATABASE overlap_sub")
			mustExec(t, p.DSN("overlap_sub"), create...)
			// the slot made apart: a subscription in the same cluster
			// cannot make its own
			mustExec(t, p.DSN("overlap"), "CREATE PUBLICATION pglease_rows FOR TABLE lease.leases",
				"SELECT pg_create_logical_replication_slot('pglease_rows', 'pgoutput')")
			source := fmt.Sprintf("host=%s port=%d user=%s dbname=overlap", p.Socket(), p.Port, p.User)
			mustExec(t, p.DSN("overlap_sub"), "CREATE SUBSCRIPTION pglease_rows CONNECTION '"+source+
				"' PUBLICATION pglease_rows WITH (create_slot = false, slot_name = 'pglease_rows')")
			if err := p.WaitSubscribed(ctx, "overlap_sub"); err != nil {
				t.Fatal(err)
			}
			sub := connect(t, p.DSN("overlap_sub"))
			time.Sleep(500 * time.Millisecond)
			mustExec(t, p.DSN("overlap_sub"), "ALTER SUBSCRIPTION pglease_rows DISABLE")
			start := time.Now()
			mustExec(t, p.DSN("overlap_sub"), "ALTER SUBSCRIPTION pglease_rows SET (slot_name = NONE)", "DROP SUBSCRIPTION pglease_rows")
			// the slot, once its walsender has gone (DROP DATABASE
			// refuses a database with one)
			for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				_, err := sub.Exec(ctx, "SELECT pg_drop_replication_slot('pglease_rows')")
				if err == nil {
					break
				}
				if time.Now().After(end) {
					t.Fatalf("the slot: %v", err)
				}
			}
			time.Sleep(time.Second - time.Since(start))
			sub.Close(ctx)
			mustExec(t, p.DSN("postgres"), "DROP DATABASE overlap WITH (FORCE)", "ALTER DATABASE overlap_sub RENAME TO overlap")
		}},
}

// pauseKillRestart holds the WAL writer back (commits at
// synchronous_commit = off stay unflushed), lets the holders go on for
// half a second, kills the server (kill -9) and starts it again.
func pauseKillRestart(t *testing.T, p *pgserver.Server) {
	if _, err := p.PauseWALWriter(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	killRestart(t, p)
}

func TestHoldersNeverOverlap(t *testing.T) {
	testenv.Server(t)
	for _, f := range overlapFaults {
		if !f.sample && !*testenv.OverlapAll {
			continue
		}
		vs := []overlapVariant{overlapShipped}
		for _, b := range f.variants {
			if *testenv.OverlapAll || f.sampleBroken || (b.name == overlapFencing.name && f.standby) {
				vs = append(vs, b)
			}
		}
		for _, v := range vs {
			t.Run(f.name+"/"+v.name, func(t *testing.T) {
				broken := !v.safe
				// a broken variant overlaps when a holder of a lost grant or
				// renewal is still acting as the server gives the name
				// again: most runs, not every one
				tries := 1
				switch {
				case broken && *testenv.OverlapAll:
					tries = 5
				case broken:
					tries = 3
				}
				for try := 1; ; try++ {
					over, what := overlapRun(t, f, v)
					switch {
					case !broken && len(over) > 0:
						t.Errorf("%s\n%d overlaps: %s", what, len(over), strings.Join(over, "; "))
					case broken && len(over) == 0 && try < tries:
						t.Logf("try %d: %s; no overlap this time", try, what)
						continue
					case broken && len(over) == 0 && !*testenv.OverlapAll:
						// make test's share, on a machine whose load left too
						// few grants in the cut's window to lose one that is
						// still held: not shown, said so (make overlap
						// requires it)
						t.Skipf("the broken variant did not overlap in %d runs (%s): not shown under this load; make overlap requires it", tries, what)
					case broken && len(over) == 0:
						t.Errorf("the broken variant did not overlap in %d runs (%s): the test proves nothing", tries, what)
					default:
						t.Logf("%s; %d overlaps (%s)", what, len(over), strings.Join(over[:min(3, len(over))], "; "))
					}
					return
				}
			})
		}
	}
}

// overlapRun is one run: the holders for 3 s, the fault, the holders for
// 8 s (the grace is 4.04 s from the first grant tried after the fault);
// each phase longer, until 3 holdings began in it, on a loaded machine.
// It returns the overlaps found and what the run did.
func overlapRun(t *testing.T, f overlapFault, v overlapVariant) ([]string, string) {
	ctx := context.Background()
	srv, inst, err := pgserver.StartWithExtension(ctx, os.Getenv("PG_CONFIG"), model.PgLease, pglease.Files, f.server...)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	if v.ext != model.PgLease.Name {
		b := catalogued(t, v.ext)
		remove, err := pgtest.Install(inst, b.name, model.PgLease.ScriptFile(), b.edits...)
		if err != nil {
			t.Fatal(err)
		}
		defer remove()
	}
	mustExec(t, srv.DSN("postgres"), "CREATE DATABASE overlap")
	maximum := v.max
	if f.max != "" && v.max != "NULL" { // (a variant without a maximum keeps none)
		maximum = f.max
	}
	create := []string{"CREATE EXTENSION " + v.ext, "SELECT lease.set_max_ttl(" + maximum + ")"}
	if v.version != "" {
		create = []string{"CREATE EXTENSION " + v.ext + " VERSION '" + v.version + "'"}
	}
	create = append(append(create, v.setup...), "SELECT lease.set_floor('"+f.floor+"')")
	mustExec(t, srv.DSN("overlap"), create...)
	hosts := srv.Dir
	var standby *pgserver.Server
	if f.standby {
		if standby, err = srv.StartStandby(ctx, "", "s1"); err != nil {
			t.Fatal(err)
		}
		defer standby.Remove()
		hosts += "," + standby.Dir
		if f.sync {
			if err := srv.RequireSyncStandby(ctx, "s1"); err != nil {
				t.Fatal(err)
			}
		}
	}
	// every commit at synchronous_commit = off: what the floor does not
	// raise (renewals, and at the floor session everything) may be lost
	dsn := fmt.Sprintf("host=%s port=%d user=%s dbname=overlap sslmode=disable target_session_attrs=read-write connect_timeout=2 synchronous_commit=off",
		hosts, srv.Port, srv.User)
	var mu sync.Mutex
	var ivs []interval
	starts := map[string]interval{}
	var begun []int64 // when each holding started
	var procs []*osexec.Cmd
	var ins []io.WriteCloser
	var readers sync.WaitGroup
	for i := range holders {
		cmd := osexec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), holderEnv+"=h"+strconv.Itoa(i), "PGLEASE_DSN="+dsn)
		if len(f.ttls) > 0 {
			cmd.Env = append(cmd.Env, holderTTLEnv+"="+f.ttls[i%len(f.ttls)].String())
		}
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs, ins = append(procs, cmd), append(ins, in)
		holder := "h" + strconv.Itoa(i)
		readers.Add(1)
		go func() {
			defer readers.Done()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				fs := strings.Fields(sc.Text())
				if len(fs) != 4 {
					continue
				}
				epoch, _ := strconv.ParseInt(fs[2], 10, 64)
				at, _ := strconv.ParseInt(fs[3], 10, 64)
				key := holder + " " + fs[1] + " " + fs[2]
				mu.Lock()
				if fs[0] == "start" {
					starts[key] = interval{holder: holder, name: fs[1], epoch: epoch, start: at}
					begun = append(begun, at)
				} else if iv, ok := starts[key]; ok {
					iv.end = at
					ivs = append(ivs, iv)
					delete(starts, key)
				}
				mu.Unlock()
			}
		}()
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		for _, in := range ins {
			in.Close()
		}
		for _, p := range procs {
			p.Wait()
		}
		readers.Wait()
	}
	defer stop()
	// at least 3 s, and on a loaded machine until 3 holdings have begun
	// (on each side of the fault: what the check below requires)
	waitHoldings := func(side string, since int64, least time.Duration) {
		t.Helper()
		start := time.Now()
		time.Sleep(least)
		for {
			mu.Lock()
			n := 0
			for _, at := range begun {
				if at > since {
					n++
				}
			}
			mu.Unlock()
			if n >= 3 {
				return
			}
			if time.Since(start) > least+30*time.Second {
				t.Fatalf("%s with %s: %d holdings began %s the fault in %s: too little traffic to prove anything", f.name, v.name, n, side, time.Since(start).Round(time.Second))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitHoldings("before", 0, 3*time.Second)
	fault := monotonic()
	f.strike(t, srv, standby, create)
	struck := monotonic()
	waitHoldings("after", struck, 8*time.Second)
	stop()
	// a holder still acting at the end: its interval ends now
	end := monotonic()
	for _, iv := range starts {
		iv.end = end
		ivs = append(ivs, iv)
	}
	var before, after int
	var firstAfter int64
	for _, iv := range ivs {
		switch {
		case iv.start < fault:
			before++
		case iv.start > struck:
			after++
			if firstAfter == 0 || iv.start < firstAfter {
				firstAfter = iv.start
			}
		}
	}
	what := fmt.Sprintf("%s with %s: %d holdings before the fault, %d after it", f.name, v.name, before, after)
	if firstAfter != 0 {
		what += fmt.Sprintf(" (the first %.2f s after the fault was over)", float64(firstAfter-struck)/1e9)
	}
	if before < 3 || after < 3 {
		t.Fatalf("%s: too little traffic on one side of the fault to prove anything", what)
	}
	slices.SortFunc(ivs, func(a, b interval) int { return int(a.start - b.start) })
	var over []string
	for i, a := range ivs {
		for _, b := range ivs[i+1:] {
			if b.start >= a.end {
				continue
			}
			if a.name == b.name && a.holder != b.holder {
				over = append(over, fmt.Sprintf("%s: %s (epoch %d) and %s (epoch %d) for %.0f ms", a.name, a.holder, a.epoch, b.holder, b.epoch,
					float64(min(a.end, b.end)-b.start)/1e6))
			}
		}
	}
	return over, what
}
