package safety

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/pgtest"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// server starts a throwaway server of the local installation with
// pg_lease installed in it.
func server(t testing.TB) (*pgserver.Server, pgserver.Install) { return pgtest.Local(t) }

// database creates a database with pg_lease (or another extension) in it,
// fencing only (testenv.FencingOnly), and returns its DSN.
func database(t testing.TB, srv *pgserver.Server, name, ext string) string {
	t.Helper()
	mustExec(t, srv.DSN("postgres"), "CREATE DATABASE "+name)
	dsn := srv.DSN(name)
	if ext != "" {
		mustExec(t, dsn, "CREATE EXTENSION "+ext, testenv.FencingOnly)
	}
	return dsn
}

// databaseAt creates database db with pg_lease at version in it, then
// runs sqls there.
func databaseAt(t testing.TB, srv *pgserver.Server, db, version string, sqls ...string) {
	t.Helper()
	mustExec(t, srv.DSN("postgres"), "CREATE DATABASE "+db)
	mustExec(t, srv.DSN(db), append([]string{"CREATE EXTENSION " + model.PgLease.Name + " VERSION '" + version + "'"}, sqls...)...)
}

func connect(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func mustExec(t testing.TB, dsn string, sqls ...string) {
	t.Helper()
	if err := pgserver.Exec(context.Background(), dsn, sqls...); err != nil {
		t.Fatal(err)
	}
}

// connectAs connects to dsn as role (the throwaway servers trust their
// local connections).
func connectAs(t testing.TB, dsn, role string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User = role
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// waitLocked returns once a statement that contains what is seen waiting
// for a lock, or once done has a value (put back): a test that needs a
// statement to wait makes sure it does, or that it did not have to.
func waitLocked(t testing.TB, conn *pgx.Conn, what string, done chan error) {
	t.Helper()
	for {
		select {
		case err := <-done:
			done <- err
			return
		case <-time.After(20 * time.Millisecond):
		}
		var waiting bool
		if err := conn.QueryRow(context.Background(), `SELECT count(*) > 0 FROM pg_stat_activity
		                                               WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'`, what).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
	}
}
