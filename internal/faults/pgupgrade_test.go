package faults

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// TestPgUpgrade runs pg_upgrade (same major: the path every major upgrade
// takes, a new cluster with a new system identifier) under a database
// whose leases are held across it. With 0.4.0 the held lease renews and
// releases with its epoch, and new grants lie in a new generation, above
// every epoch before. With 0.3.0 every acquire fails after it (bigint out
// of range: 0.3.0's band arithmetic), and ALTER EXTENSION pg_lease UPDATE
// rescues the database.
func TestPgUpgrade(t *testing.T) {
	testenv.Server(t)
	if os.Geteuid() != 0 {
		t.Skip("installs the extension into the server's directory and starts servers as postgres: run as root")
	}
	// (said once, here, so that the test itself reports SKIP, not a PASS
	// of skipped parts)
	inst := install(t)
	if _, err := os.Stat(inst.BinDir + "/pg_upgrade"); err != nil {
		t.Skipf("%s has no pg_upgrade (the npm builds of 14 and 16)", inst.BinDir)
	}
	for _, version := range []string{model.PgLease.Version(), "0.3.0"} {
		t.Run(version, func(t *testing.T) { pgUpgrade(t, inst, version) })
	}
}

func pgUpgrade(t *testing.T, inst pgserver.Install, version string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := pgserver.InstallFiles(model.PgLease, pglease.Files, inst); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "pglease-pgupgrade-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	old, err := pgserver.StartWith(ctx, inst, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Remove()
	if err := pgserver.Exec(ctx, old.DSN("postgres"), "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	if err := pgserver.Exec(ctx, old.DSN(db), "CREATE EXTENSION pg_lease VERSION '"+version+"'"); err != nil {
		t.Fatal(err)
	}
	epoch := func(s *pgserver.Server, sql string) (int64, error) {
		var e int64
		err := queryRow(ctx, s.DSN(db), sql, &e)
		return e, err
	}
	held, err := epoch(old, "SELECT epoch FROM lease.acquire('held', 'a', interval '1 hour')")
	if err != nil {
		t.Fatal(err)
	}
	last := held
	for i := range 3 {
		e, err := epoch(old, "SELECT epoch FROM lease.acquire('free', 'w"+strconv.Itoa(i)+"', interval '1 hour')")
		if err != nil {
			t.Fatal(err)
		}
		if err := pgserver.Exec(ctx, old.DSN(db), "SELECT lease.release('free', 'w"+strconv.Itoa(i)+"', "+strconv.FormatInt(e, 10)+")"); err != nil {
			t.Fatal(err)
		}
		last = max(last, e+1)
	}
	if err := old.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	next, err := pgserver.StartWith(ctx, inst, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Remove()
	if err := next.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := next.UpgradeFrom(ctx, old); err != nil {
		t.Fatal(err)
	}
	if version == "0.3.0" {
		_, err := epoch(next, "SELECT epoch FROM lease.acquire('free', 'x', interval '1 hour')")
		if err == nil || !strings.Contains(err.Error(), "bigint out of range") {
			t.Fatalf("0.3.0 after pg_upgrade: acquire gave %v; want 0.3.0's bigint out of range", err)
		}
		t.Logf("0.3.0 after pg_upgrade: %v; updating", err)
		if err := pgserver.Exec(ctx, next.DSN(db), "ALTER EXTENSION pg_lease UPDATE"); err != nil {
			t.Fatal(err)
		}
	}
	if err := pgserver.Exec(ctx, next.DSN(db), "DO $$ BEGIN IF (SELECT status FROM lease.renew('held', 'a', "+strconv.FormatInt(held, 10)+", interval '1 hour')) <> 'ok' THEN RAISE 'held lease lost'; END IF; END $$"); err != nil {
		t.Fatalf("the lease held across pg_upgrade: %v", err)
	}
	e, err := epoch(next, "SELECT epoch FROM lease.acquire('free', 'x', interval '1 hour')")
	if err != nil {
		t.Fatal(err)
	}
	n, err := epoch(next, "SELECT epoch FROM lease.acquire('new', 'x', interval '1 hour')")
	if err != nil {
		t.Fatal(err)
	}
	var gen int64
	if err := queryRow(ctx, next.DSN(db), "SELECT generation FROM lease.current_era()", &gen); err != nil {
		t.Fatal(err)
	}
	if e <= last || n <= last || gen < 1 {
		t.Errorf("after pg_upgrade: free granted at %d, a new name at %d (generation %d); the last epoch before was %d", e, n, gen, last)
	}
	var status string
	if err := queryRow(ctx, next.DSN(db), "SELECT lease.release('held', 'a', "+strconv.FormatInt(held, 10)+")", &status); err != nil || status != "ok" {
		t.Errorf("release of the held lease: %q, %v", status, err)
	}
	t.Logf("%s, PostgreSQL %d: before pg_upgrade epochs up to %d; after it %d and %d, generation %d", version, inst.Major, last, e, n, gen)
}
