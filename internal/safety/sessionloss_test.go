package safety

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
)

// purgeDuringKeepAlive runs finding 4 of 0.5.1's review in a database of
// version: a session of 4 s holds a name; its keep-alive runs and has not
// committed when the session's old expiry passes and purge() runs; then the
// keep-alive commits ok. It returns how many names purge() deleted, and
// whether another owner can then take the name.
func purgeDuringKeepAlive(t *testing.T, srv *pgserver.Server, db, version string) (deleted int64, taken bool) {
	t.Helper()
	ctx := context.Background()
	databaseAt(t, srv, db, version)
	holder, other := connect(t, srv.DSN(db)), connect(t, srv.DSN(db))
	var session int64
	var opened time.Time
	if err := holder.QueryRow(ctx, "SELECT session, expires_at - interval '4 seconds' FROM lease.open_session('h', interval '4 seconds')").Scan(&session, &opened); err != nil {
		t.Fatal(err)
	}
	var acquired bool
	if err := holder.QueryRow(ctx, "SELECT acquired FROM lease.session_acquire($1, 'h', 'n')", session).Scan(&acquired); err != nil || !acquired {
		t.Fatalf("session_acquire: %v %v", acquired, err)
	}
	// the keep-alive, in flight from 1 s after the opening (its renewal
	// runs to about 5 s after it)
	time.Sleep(time.Until(opened.Add(time.Second)))
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var status string
	if err := tx.QueryRow(ctx, "SELECT status FROM lease.keep_alive($1, 'h')", session).Scan(&status); err != nil || status != "ok" {
		t.Fatalf("keep_alive: %q %v", status, err)
	}
	time.Sleep(time.Until(opened.Add(4500 * time.Millisecond))) // past the session's old expiry
	done := make(chan error, 1)
	go func() {
		c, err := pgx.Connect(ctx, srv.DSN(db))
		if err != nil {
			done <- err
			return
		}
		defer c.Close(ctx)
		done <- c.QueryRow(ctx, "SELECT lease.purge()").Scan(&deleted)
	}()
	waitLocked(t, other, "lease.purge", done)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := other.QueryRow(ctx, "SELECT acquired FROM lease.acquire('n', 'o', interval '10 seconds')").Scan(&taken); err != nil {
		t.Fatal(err)
	}
	return deleted, taken
}

// releasedBehind runs the rest of finding 4: another session releases a
// session's name with the owner and epoch that inspect() shows; the
// session's next keep-alive says so (released, NULL where keep_alive has
// no such column).
func releasedBehind(t *testing.T, srv *pgserver.Server, db, version string) *int64 {
	t.Helper()
	ctx := context.Background()
	databaseAt(t, srv, db, version)
	holder, other := connect(t, srv.DSN(db)), connect(t, srv.DSN(db))
	var session int64
	if err := holder.QueryRow(ctx, "SELECT session FROM lease.open_session('h', interval '10 seconds')").Scan(&session); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		if _, err := holder.Exec(ctx, "SELECT * FROM lease.session_acquire($1, 'h', $2)", session, n); err != nil {
			t.Fatal(err)
		}
	}
	var status string
	if err := other.QueryRow(ctx, "SELECT lease.release('a', i.owner, i.epoch) FROM lease.inspect('a') AS i").Scan(&status); err != nil || status != "ok" {
		t.Fatalf("another session's release: %q %v", status, err)
	}
	var released *int64
	if err := holder.QueryRow(ctx, "SELECT k.status, (to_jsonb(k) ->> 'released')::bigint FROM lease.keep_alive($1, 'h') AS k", session).Scan(&status, &released); err != nil || status != "ok" {
		t.Fatalf("keep_alive: %q %v", status, err)
	}
	return released
}

// TestSessionKeepsItsNames: a name leaves a live session only by its
// holder's release or close, or by the session's lapse, and what took it
// the holder learns at its next keep-alive. purge() waits for a keep-alive
// in flight and sees its renewal (0.5.0, the broken variant, deleted the
// name, and another owner took it while the keep-alive answered ok); a
// release by another session that knew the owner and epoch is counted in
// the keep-alive's answer (0.5.0's keep-alive says nothing).
func TestSessionKeepsItsNames(t *testing.T) {
	srv, _ := server(t)
	v := model.PgLease.Version()
	if deleted, taken := purgeDuringKeepAlive(t, srv, "purge_new", v); deleted != 0 || taken {
		t.Errorf("%s: purge() deleted %d names during a keep-alive, and another owner took the name: %v", v, deleted, taken)
	}
	deleted, taken := purgeDuringKeepAlive(t, srv, "purge_old", "0.5.0")
	t.Logf("0.5.0: purge() deleted %d names during the keep-alive; another owner took the name: %v", deleted, taken)
	if deleted == 0 || !taken {
		t.Errorf("0.5.0 kept the name (deleted %d, taken %v): the test proves nothing", deleted, taken)
	}
	if r := releasedBehind(t, srv, "behind_new", v); r == nil || *r != 1 {
		t.Errorf("%s: the keep-alive after another session released one of its names reports released = %v; want 1", v, r)
	}
	if r := releasedBehind(t, srv, "behind_old", "0.5.0"); r != nil {
		t.Errorf("0.5.0's keep-alive reports released = %d: the test proves nothing", *r)
	}
}

// secondSession runs finding 11's second half in a database of version:
// one owner's two sessions, the first holding a name, the second
// session_acquire()s it. It returns the error's SQLSTATE ("" if none) and
// the session the name is under afterwards.
func secondSession(t *testing.T, srv *pgserver.Server, db, version string) (code string, under int64, first int64) {
	t.Helper()
	ctx := context.Background()
	databaseAt(t, srv, db, version)
	conn := connect(t, srv.DSN(db))
	var second int64
	if err := conn.QueryRow(ctx, "SELECT (SELECT session FROM lease.open_session('h', interval '10 seconds')), (SELECT session FROM lease.open_session('h', interval '10 seconds'))").Scan(&first, &second); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT * FROM lease.session_acquire($1, 'h', 'n')", first); err != nil {
		t.Fatal(err)
	}
	_, err := conn.Exec(ctx, "SELECT * FROM lease.session_acquire($1, 'h', 'n')", second)
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		code = pe.Code
	} else if err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT session_id FROM lease.leases WHERE name = 'n'").Scan(&under); err != nil {
		t.Fatal(err)
	}
	return code, under, first
}

// TestSessionAcquireMovesOnlyItsOwn: session_acquire() never moves a name
// from another session (of the same owner) under its own: it refuses with
// 55000 and the name stays where it was. 0.5.0, the broken variant, moved
// it silently, and the first session's keep-alives kept nothing.
func TestSessionAcquireMovesOnlyItsOwn(t *testing.T) {
	srv, _ := server(t)
	v := model.PgLease.Version()
	if code, under, first := secondSession(t, srv, "second_new", v); code != "55000" || under != first {
		t.Errorf("%s: the second session's session_acquire gave %q and left the name under session %d; want 55000 and session %d", v, code, under, first)
	}
	code, under, first := secondSession(t, srv, "second_old", "0.5.0")
	t.Logf("0.5.0: session_acquire gave %q; the name went from session %d to %d", code, first, under)
	if code != "" || under == first {
		t.Errorf("0.5.0 did not move the name (%q, %d): the test proves nothing", code, under)
	}
}
