package safety

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// server starts a throwaway server of the local installation (Debian's
// PostgreSQL 15, which make deps installs) with pg_lease installed in it.
func server(t testing.TB) (*pgserver.Server, pgserver.Install) {
	t.Helper()
	testenv.Server(t)
	srv, inst, err := pgserver.StartWithExtension(context.Background(), os.Getenv("PG_CONFIG"), model.PgLease, pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	return srv, inst
}

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

// variant installs pg_lease with edited install script as extension name.
func variant(t testing.TB, inst pgserver.Install, name string, edit func(string) string) {
	t.Helper()
	remove, err := pgserver.InstallVariant(model.PgLease, pglease.Files, inst, name, func(s string) (string, error) { return edit(s), nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
}
