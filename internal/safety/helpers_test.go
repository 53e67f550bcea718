package safety

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgtest"
	"github.com/pglease/pglease-gen/internal/render"
)

// server starts a throwaway server of the local installation (Debian's
// PostgreSQL 15, which make deps installs) with pg_lease installed in it.
func server(t testing.TB) (*pgtest.Server, pgtest.Install) {
	t.Helper()
	srv, inst, err := pgtest.StartWithExtension(context.Background(), os.Getenv("PG_CONFIG"), model.PgLease, pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	return srv, inst
}

// database creates a database with pg_lease (or another extension) in it
// and returns its DSN.
func database(t testing.TB, srv *pgtest.Server, name, ext string) string {
	t.Helper()
	mustExec(t, srv.DSN("postgres"), "CREATE DATABASE "+name)
	dsn := srv.DSN(name)
	if ext != "" {
		mustExec(t, dsn, "CREATE EXTENSION "+ext)
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
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, s := range sqls {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// variant installs pg_lease with edited install script as extension name.
func variant(t testing.TB, inst pgtest.Install, name string, edit func(string) string) {
	t.Helper()
	files, err := render.Extension(model.PgLease, pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	dir := inst.ExtensionDir()
	control := filepath.Join(dir, name+".control")
	script := filepath.Join(dir, name+"--"+model.PgLease.Version+".sql")
	os.WriteFile(control, files[model.PgLease.ControlFile()], 0o644)
	os.WriteFile(script, []byte(edit(string(files[model.PgLease.ScriptFile()]))), 0o644)
	t.Cleanup(func() { os.Remove(control); os.Remove(script) })
}
