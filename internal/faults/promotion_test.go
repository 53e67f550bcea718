package faults

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/era"
	"github.com/pglease/pglease-gen/internal/layout"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// install is the PostgreSQL the test runs: PG_CONFIG's; with PG_MAJOR
// instead, the Debian layout's of that major, through its pg_config, or
// for a build without one (the npm registry's, in the local images of 14
// and 16) by the layout alone.
func install(t *testing.T) pgserver.Install {
	t.Helper()
	pgConfig := os.Getenv("PG_CONFIG")
	if m := os.Getenv("PG_MAJOR"); m != "" && pgConfig == "" {
		n, err := strconv.Atoi(m)
		if err != nil {
			t.Fatalf("PG_MAJOR=%q", m)
		}
		l := layout.Debian(n)
		if _, err := os.Stat(l.Bin("pg_config")); err != nil {
			return pgserver.InstallOf(l)
		}
		pgConfig = l.Bin("pg_config")
	}
	inst, err := pgserver.FindInstall(context.Background(), pgConfig)
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// TestEraAfterPromotion is the cheapest check that a major tells pg_lease
// its timeline and system identifier: a real promotion of a streaming
// standby (made with pg_basebackup, or where the build has none, a cold
// copy), after which the promoted server's era is on timeline 2 of the
// same system, and a name's next epoch lies in that era's band, above
// every epoch the primary gave it.
func TestEraAfterPromotion(t *testing.T) {
	testenv.Server(t)
	if os.Geteuid() != 0 {
		t.Skip("installs the extension into the server's directory and starts servers as postgres: run as root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	inst := install(t)
	if err := pgserver.InstallFiles(model.PgLease, pglease.Files, inst); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "pglease-promotion-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	primary, err := pgserver.StartWith(ctx, inst, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Remove()
	if err := pgserver.Exec(ctx, primary.DSN("postgres"), "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	if err := pgserver.Exec(ctx, primary.DSN(db), "CREATE EXTENSION "+model.PgLease.Name, testenv.FencingOnly); err != nil {
		t.Fatal(err)
	}
	acquire := func(s *pgserver.Server, owner string) int64 {
		t.Helper()
		var epoch int64
		if err := queryRow(ctx, s.DSN(db), "SELECT epoch FROM lease.acquire('n', '"+owner+"', interval '1 hour')", &epoch); err != nil {
			t.Fatal(err)
		}
		if err := pgserver.Exec(ctx, s.DSN(db), "SELECT lease.release('n', '"+owner+"', "+strconv.FormatInt(epoch, 10)+")"); err != nil {
			t.Fatal(err)
		}
		return epoch
	}
	type eraRow struct {
		band, timeline, sysid int64
		current               bool
	}
	current := func(s *pgserver.Server) eraRow {
		t.Helper()
		var r eraRow
		if err := queryRow(ctx, s.DSN(db), "SELECT band, timeline, system_identifier, current FROM lease.current_era()", &r.band, &r.timeline, &r.sysid, &r.current); err != nil {
			t.Fatal(err)
		}
		return r
	}
	before := acquire(primary, "a")
	first := current(primary)
	if first.timeline != 1 || !first.current {
		t.Fatalf("the primary's era: %+v", first)
	}
	standby, err := primary.StartStandby(ctx, dir, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer standby.Remove()
	for range 3 {
		before = acquire(primary, "b")
	}
	// wait until the standby has replayed everything the primary wrote
	var lsn string
	if err := queryRow(ctx, primary.DSN(db), "SELECT pg_current_wal_lsn()::text", &lsn); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var caught bool
		if err := queryRow(ctx, standby.DSN(db), "SELECT pg_last_wal_replay_lsn() >= '"+lsn+"'::pg_lsn", &caught); err == nil && caught {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby did not replay up to %s\n%s", lsn, standby.Log())
		}
	}
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	after := acquire(standby, "c")
	now := current(standby)
	if now.timeline != 2 || now.sysid != first.sysid || !now.current || now.band <= first.band {
		t.Errorf("after the promotion: era %+v, before %+v; want timeline 2 of the same system, a higher band, current", now, first)
	}
	// the first era of timeline 2 in the primary's generation: one
	// timeline above the primary's first (0.4.0's numbering)
	if want, _ := era.Band04(0, 1, 0); now.band != want {
		t.Errorf("band %d, want %d (generation 0, timeline +1, first era)", now.band, want)
	}
	if after <= before || after>>32 != now.band {
		t.Errorf("the first epoch after the promotion is %d (band %d); the last before it %d; the era's band %d", after, after>>32, before, now.band)
	}
	t.Logf("PostgreSQL %d: the last epoch before the promotion %d (band %d), the first after it %d (band %d, timeline %d)",
		inst.Major, before, before>>32, after, now.band, now.timeline)
}
