package safety

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/pgtest"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// The era code's subtle bug classes (issue 48): each test below runs the
// shipped script and a variant with one such bug put in, and must pass
// on the first and fail on the second. Which tests before these missed
// each class is in dev/eras.md ("Bug classes and the tests that catch
// them").

// eachOf runs check on a server of its own with the shipped extension and
// with the catalogue's variant v (variants_test.go); check reports whether it saw two grants of one epoch (or an
// epoch below one given before), and must see none with the shipped one
// and some with the variant.
func eachOf(t *testing.T, v string, settings []string, check func(t *testing.T, srv *pgserver.Server, ext string) (bad bool, what string)) {
	testenv.Server(t)
	for _, c := range []struct {
		ext  string
		safe bool
	}{{model.PgLease.Name, true}, {v, false}} {
		t.Run(c.ext, func(t *testing.T) {
			srv, inst := pgtest.Local(t, settings...)
			if !c.safe {
				installVariant(t, inst, v)
			}
			bad, what := check(t, srv, c.ext)
			switch {
			case c.safe && bad:
				t.Errorf("the shipped extension: %s", what)
			case !c.safe && !bad:
				t.Errorf("the variant passed too (%s): the test proves nothing", what)
			default:
				t.Log(what)
			}
		})
	}
}

// grant acquires name for owner in dsn and returns the epoch (releasing
// it when release is set); sets are run first on the same connection.
func grant(t *testing.T, dsn, name, owner string, release bool, sets ...string) int64 {
	t.Helper()
	ctx := context.Background()
	conn := connect(t, dsn)
	defer conn.Close(ctx)
	for _, s := range sets {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	var epoch int64
	if err := conn.QueryRow(ctx, "SELECT epoch FROM lease.acquire($1, $2, interval '1 millisecond') WHERE acquired", name, owner).Scan(&epoch); err != nil {
		t.Fatalf("acquire %s: %v", name, err)
	}
	if release {
		if _, err := conn.Exec(ctx, "SELECT lease.release($1, $2, $3)", name, owner, epoch); err != nil {
			t.Fatal(err)
		}
	}
	return epoch
}

func band(e int64) int64 { return e >> 32 }

// killRestart kills the server (kill -9 of every process at once) and
// starts it again: crash recovery.
func killRestart(t *testing.T, srv *pgserver.Server) {
	t.Helper()
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// crashRestart stops the server as a crash would (pg_ctl -m immediate)
// and starts it again.
func crashRestart(t *testing.T, srv *pgserver.Server) {
	t.Helper()
	if err := srv.Crash(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Class 1: a dump restored into the same cluster after its source entered
// a later era. The restored rows are not the copy's own (another
// database's OID, the same system identifier): it must enter an era above
// any its source can have entered since the dump. The variant takes rows
// of the same system identifier as its own, and continues them as after
// a crash: into the band the source itself entered after its crash.
func TestRestoreAfterTheSourceMovedOn(t *testing.T) {
	ctx := context.Background()
	eachOf(t, "pg_lease_restore_sysid", nil, func(t *testing.T, srv *pgserver.Server, ext string) (bool, string) {
		// in the server's directory: pg_dump runs as the server's user
		dump := filepath.Join(srv.Dir, "dump")
		// in place: the source crashes after the dump and grants in its
		// next era; then it is dropped and the dump restored under its name
		src := database(t, srv, "src", ext)
		grant(t, src, "a", "w1", true)
		if err := srv.Dump(ctx, "src", dump); err != nil {
			t.Fatal(err)
		}
		crashRestart(t, srv)
		later := grant(t, src, "a", "w2", true)
		mustExec(t, srv.DSN("postgres"), "DROP DATABASE src WITH (FORCE)")
		if err := srv.Restore(ctx, "src", dump); err != nil {
			t.Fatal(err)
		}
		restored := grant(t, src, "a", "w3", true)
		// beside: a copy restored next to its source, then the source
		// crashes and grants in its next era
		src2 := database(t, srv, "src2", ext)
		grant(t, src2, "a", "w1", true)
		if err := srv.Dump(ctx, "src2", dump); err != nil {
			t.Fatal(err)
		}
		if err := srv.Restore(ctx, "copy2", dump); err != nil {
			t.Fatal(err)
		}
		fromCopy := grant(t, srv.DSN("copy2"), "a", "w2", false)
		crashRestart(t, srv)
		fromSource := grant(t, src2, "a", "w3", false)
		bad := band(restored) <= band(later) || band(fromCopy) == band(fromSource)
		return bad, fmt.Sprintf("in place: the source granted %d after its crash, the restored dump %d; beside: the copy granted %d, the source after its crash %d",
			later, restored, fromCopy, fromSource)
	})
}

// Class 2: a standby promoted before the database's first grant, while
// the old primary still grants (a split brain from a fresh install). The
// era row of the install carries the timeline it was installed on: the
// promoted server, on the next timeline, must enter an era of its own.
// The variant continues the installed era whatever the timeline: both
// servers grant epoch 1.
func TestPromotedBeforeTheFirstGrant(t *testing.T) {
	ctx := context.Background()
	eachOf(t, "pg_lease_promoted_fresh", nil, func(t *testing.T, srv *pgserver.Server, ext string) (bool, string) {
		database(t, srv, "fresh", ext)
		standby, err := srv.StartStandby(ctx, "", "s1")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(standby.Remove)
		if err := standby.Promote(ctx); err != nil {
			t.Fatal(err)
		}
		old := grant(t, srv.DSN("fresh"), "a", "w1", false)
		promoted := grant(t, standby.DSN("fresh"), "a", "w2", false)
		return band(promoted) <= band(old), fmt.Sprintf("the old primary granted %d, the standby promoted before any grant %d", old, promoted)
	})
}

// Class 3: era_now, the era of this run of the server, that survives a
// crash. It is unlogged: a crash empties it, and the next grant enters a
// new era above whatever the crash lost. The variant keeps it in a logged
// table: after the crash its row says the era goes on, and a grant lost
// in the crash (floor session, synchronous_commit off, the WAL writer
// held back) is given again.
func TestCrashEndsTheRunsEra(t *testing.T) {
	ctx := context.Background()
	eachOf(t, "pg_lease_era_now_logged", []string{"autovacuum=off"}, func(t *testing.T, srv *pgserver.Server, ext string) (bool, string) {
		dsn := database(t, srv, "crashed", ext)
		mustExec(t, dsn, "SELECT lease.set_floor('session')")
		grant(t, dsn, "a", "w1", true)
		if _, err := srv.PauseWALWriter(ctx); err != nil {
			t.Fatal(err)
		}
		lost := grant(t, dsn, "a", "w2", false, "SET synchronous_commit = off")
		killRestart(t, srv)
		after := grant(t, dsn, "a", "w3", false)
		return after <= lost, fmt.Sprintf("granted %d before the crash (not flushed), %d after it", lost, after)
	})
}

// Class 4: an era entry whose commit is not durable. After a crash, the
// first grant enters the next era; its commit is raised to
// synchronous_commit = on whatever the session's, so that a second crash
// cannot lose the entry with the grants made in it. The variant commits
// the entry at the session's setting: with the WAL writer held back, the
// second crash loses it, and the same era is entered again, its epochs
// given twice.
func TestEraEntryOutlivesTheNextCrash(t *testing.T) {
	ctx := context.Background()
	eachOf(t, "pg_lease_entry_unflushed", []string{"autovacuum=off"}, func(t *testing.T, srv *pgserver.Server, ext string) (bool, string) {
		dsn := database(t, srv, "crashed", ext)
		mustExec(t, dsn, "SELECT lease.set_floor('session')")
		grant(t, dsn, "a", "w1", true)
		killRestart(t, srv)
		if _, err := srv.PauseWALWriter(ctx); err != nil {
			t.Fatal(err)
		}
		entered := grant(t, dsn, "a", "w2", false, "SET synchronous_commit = off")
		killRestart(t, srv)
		after := grant(t, dsn, "a", "w3", false)
		return after <= entered, fmt.Sprintf("the first grant after a crash entered an era with %d; after a second crash the next grant was %d", entered, after)
	})
}
