package safety

import (
	"context"
	"fmt"
	"testing"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
)

// TestChangesAtOffOutliveACrash: a grant and a release commit at
// synchronous_commit = on at least, whatever the session's (the floor,
// on by default), so that a crash cannot lose what a caller was told.
// 0.5.0's scripts raise it inline, without durable()'s call, when the
// floor is on and the session below it. With the WAL writer held back, a
// session at off takes one name and releases another (granted durably
// before); after kill -9 and crash recovery the first is at its epoch
// and the second released. The variant's inline branch does nothing:
// both changes are lost.
func TestChangesAtOffOutliveACrash(t *testing.T) {
	ctx := context.Background()
	eachOf(t, "pg_lease_floor_not_raised", []string{"autovacuum=off"}, func(t *testing.T, srv *pgserver.Server, ext string) (bool, string) {
		dsn := database(t, srv, "floor", ext)
		// (b durable; the era entered before the WAL writer stops)
		conn := connect(t, dsn)
		var held int64
		if err := conn.QueryRow(ctx, "SELECT epoch FROM lease.acquire('b', 'w0', interval '1 minute') WHERE acquired").Scan(&held); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.PauseWALWriter(ctx); err != nil {
			t.Fatal(err)
		}
		var granted int64
		var released string
		for _, q := range []struct {
			sql  string
			args []any
			into any
		}{
			{"SET synchronous_commit = off", nil, nil},
			{"SELECT epoch FROM lease.acquire('a', 'w1', interval '1 minute') WHERE acquired", nil, &granted},
			{"SELECT lease.release('b', 'w0', $1)", []any{held}, &released},
		} {
			var err error
			if q.into == nil {
				_, err = conn.Exec(ctx, q.sql, q.args...)
			} else {
				err = conn.QueryRow(ctx, q.sql, q.args...).Scan(q.into)
			}
			if err != nil {
				t.Fatalf("%s: %v", q.sql, err)
			}
		}
		if released != "ok" {
			t.Fatalf("release: %s", released)
		}
		conn.Close(ctx)
		killRestart(t, srv)
		var aEpoch, bEpoch *int64
		var bOwner *string
		after := connect(t, dsn)
		if err := after.QueryRow(ctx, "SELECT (SELECT epoch FROM lease.leases WHERE name = 'a'), epoch, owner FROM lease.leases WHERE name = 'b'").Scan(&aEpoch, &bEpoch, &bOwner); err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("granted a at %d and released b (epoch %d) at synchronous_commit = off; after the crash a's row has %s, b's %s owned by %s",
			granted, held, show(aEpoch), show(bEpoch), show(bOwner))
		return aEpoch == nil || *aEpoch != granted || bOwner != nil || bEpoch == nil || *bEpoch != held+1, what
	})
}

func show[T any](p *T) string {
	if p == nil {
		return "NULL"
	}
	return fmt.Sprint(*p)
}

// raisedBySession is what synchronous_commit a grant and a release leave
// for their commit in a database of version whose floor set_floor() lowered
// to session, in a session at off that asks for on itself (SET
// lease.synchronous_commit = on).
func raisedBySession(t *testing.T, srv *pgserver.Server, db, version string) []string {
	t.Helper()
	ctx := context.Background()
	mustExec(t, srv.DSN("postgres"), "CREATE DATABASE "+db)
	mustExec(t, srv.DSN(db), "CREATE EXTENSION pg_lease VERSION '"+version+"'", "SELECT lease.set_floor('session')",
		// (the era entered first: an entry is durable whatever the floor)
		"SELECT * FROM lease.acquire('first', 'w', interval '10 seconds')")
	conn := connect(t, srv.DSN(db))
	var out []string
	for _, sql := range []string{
		"SELECT * FROM lease.acquire('n', 'w', interval '10 seconds')",
		"SELECT lease.release('n', 'w', 1)",
		"SELECT * FROM lease.open_session('w', interval '10 seconds')",
	} {
		var sc string
		if _, err := conn.Exec(ctx, "SET synchronous_commit = off; SET lease.synchronous_commit = on; BEGIN"); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if err := conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&sc); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
			t.Fatal(err)
		}
		out = append(out, sc)
	}
	return out
}

// TestSessionRaisesALoweredFloor: with the database's floor lowered to
// session, a session that sets lease.synchronous_commit = on still commits
// its grants, releases and sessions at on. 0.5.0 (the broken variant)
// left them at off.
func TestSessionRaisesALoweredFloor(t *testing.T) {
	srv, _ := server(t)
	if got := raisedBySession(t, srv, "raised_new", model.PgLease.Version()); fmt.Sprint(got) != "[on on on]" {
		t.Errorf("%s: commits at %v; want on for each", model.PgLease.Version(), got)
	}
	old := raisedBySession(t, srv, "raised_old", "0.5.0")
	t.Logf("0.5.0: %v", old)
	if fmt.Sprint(old) != "[off off off]" {
		t.Errorf("0.5.0 committed at %v: the test proves nothing", old)
	}
}
