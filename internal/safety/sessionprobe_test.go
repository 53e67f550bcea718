package safety

import (
	"context"
	"testing"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
)

// probe is finding 12 in a database of version, as a role that owns
// nothing: a victim's session holds name v; the prober reads v's owner
// with inspect() (no secret) and its own session's id, then calls
// close_session(id, that owner) for the 200 ids on either side of its
// own. It returns whether v is still the victim's afterwards, and the
// answers of keep_alive and close_session for the victim's id under a
// wrong owner against those for an id no session has.
func probe(t *testing.T, srv *pgserver.Server, db, version string) (kept bool, wrongOwner, unknown [2]string) {
	t.Helper()
	ctx := context.Background()
	role := db + "_prober"
	mustExec(t, srv.DSN("postgres"), "CREATE DATABASE "+db, "CREATE ROLE "+role+" LOGIN")
	t.Cleanup(func() {
		pgserver.Exec(context.Background(), srv.DSN("postgres"), "DROP DATABASE "+db, "DROP ROLE "+role)
	})
	mustExec(t, srv.DSN(db), "CREATE EXTENSION "+model.PgLease.Name+" VERSION '"+version+"'")
	victim, prober := connect(t, srv.DSN(db)), connectAs(t, srv.DSN(db), role)
	var session int64
	if err := victim.QueryRow(ctx, "SELECT session FROM lease.open_session('victim#7f3a', interval '1 minute')").Scan(&session); err != nil {
		t.Fatal(err)
	}
	if _, err := victim.Exec(ctx, "SELECT * FROM lease.session_acquire($1, 'victim#7f3a', 'v')", session); err != nil {
		t.Fatal(err)
	}
	for i, q := range []string{"SELECT status FROM lease.keep_alive($1, 'someone')", "SELECT status FROM lease.close_session($1, 'someone')"} {
		if err := prober.QueryRow(ctx, q, session).Scan(&wrongOwner[i]); err != nil {
			t.Fatal(err)
		}
		if err := prober.QueryRow(ctx, q, int64(-5)).Scan(&unknown[i]); err != nil {
			t.Fatal(err)
		}
	}
	var own int64
	var owner string
	if err := prober.QueryRow(ctx, "SELECT (SELECT session FROM lease.open_session('prober', interval '1 minute')), (SELECT owner FROM lease.inspect('v'))").Scan(&own, &owner); err != nil {
		t.Fatal(err)
	}
	var closed int
	if err := prober.QueryRow(ctx, `SELECT count(*) FILTER (WHERE c.status = 'ok')
		FROM generate_series($1::bigint - 200, $1::bigint + 200) AS id, lease.close_session(id, $2) AS c
		WHERE id <> $1`, own, owner).Scan(&closed); err != nil {
		t.Fatal(err)
	}
	var holder string
	if err := victim.QueryRow(ctx, "SELECT coalesce(owner, '') FROM lease.inspect('v')").Scan(&holder); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: the prober closed %d sessions of owner %q near its own id; v's holder is now %q", version, closed, owner, holder)
	return holder == "victim#7f3a" && closed == 0, wrongOwner, unknown
}

// TestSessionIdsCannotBeProbed: finding 12. A session's owner is no
// secret (inspect() shows it), so its id must be: another role that
// guesses ids near its own closes the victim's session and frees its name
// on 0.5.0 (ids from a sequence), and cannot on 0.5.1 (random ids). And
// keep_alive and close_session answer an id that is another owner's as
// they answer an id nobody has (0.5.0: not_owner against lapsed, which
// told the prober which ids were in use).
func TestSessionIdsCannotBeProbed(t *testing.T) {
	srv, _ := server(t)
	v := model.PgLease.Version()
	kept, wrong, unknown := probe(t, srv, "probe_new", v)
	if !kept {
		t.Errorf("%s: a role that guessed ids near its own session's closed the victim's session", v)
	}
	if wrong != unknown {
		t.Errorf("%s: keep_alive and close_session answer %v for another owner's session and %v for an id nobody has: the answer tells them apart", v, wrong, unknown)
	}
	kept, wrong, unknown = probe(t, srv, "probe_old", "0.5.0")
	if kept || wrong == unknown {
		t.Errorf("0.5.0 (the broken variant) kept the victim's name (%v) and answered %v against %v: the test proves nothing", kept, wrong, unknown)
	}
}
