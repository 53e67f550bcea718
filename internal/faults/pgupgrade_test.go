package faults

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/images"
	"github.com/pglease/pglease-gen/internal/layout"
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
		t.Run(version, func(t *testing.T) { pgUpgrade(t, inst, inst, version) })
	}
}

// TestPgUpgradecluster moves a cluster from one major to the next as a
// Debian user does it: both majors' Debian packages installed from the
// image's repository (NEW, the major -faults.upgradecluster names, and
// OLD, the one images.UpgradeFrom says its image also offers), a cluster
// of OLD made with pg_createcluster, leases held in it, then
// pg_upgradecluster -m upgrade (pg_upgrade under postgresql-common) to
// NEW. With 0.4.0 the held lease renews and releases
// with its epoch on NEW, and new grants lie in a new generation above
// every epoch before; with 0.3.0 every acquire fails until ALTER
// EXTENSION pg_lease UPDATE. It runs in a Debian image whose repository
// offers both majors (images.UpgradeFrom), as root: it installs packages.
func TestPgUpgradecluster(t *testing.T) {
	n := *testenv.UpgradeCluster
	if n == 0 {
		t.Skip("make upgrade-ci runs it in the Debian image of 19 (-faults.upgradecluster=19)")
	}
	testenv.Server(t)
	o, ok := images.UpgradeFrom(n)
	if !ok {
		t.Fatalf("-faults.upgradecluster=%d: the Debian image of %d offers no older major (images.upgradesTo)", n, n)
	}
	if os.Geteuid() != 0 {
		t.Fatal("installs packages: run as root, in the Debian image (make upgrade-ci)")
	}
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	run("apt-get", "-q", "-o", "APT::Sandbox::User=root", "update")
	run("apt-get", "-q", "-y", "--no-install-recommends", "-o", "APT::Sandbox::User=root", "install",
		model.DebServerPackage(o), model.DebServerPackage(n))
	for _, m := range []int{o, n} {
		if err := pgserver.InstallFiles(model.PgLease, pglease.Files, pgserver.InstallOf(layout.Debian(m))); err != nil {
			t.Fatal(err)
		}
	}
	for _, version := range []string{model.PgLease.Version(), "0.3.0"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			dsn := func(db string) string { return "host=/var/run/postgresql port=5432 user=postgres dbname=" + db }
			run("pg_createcluster", strconv.Itoa(o), "main", "--start", "--", "--auth-local=trust", "--no-locale", "-E", "UTF8")
			defer func() {
				for _, m := range []int{o, n} {
					exec.Command("pg_dropcluster", "--stop", strconv.Itoa(m), "main").Run()
				}
			}()
			held, last := leasesBefore(ctx, t, dsn, version)
			run("pg_upgradecluster", "-m", "upgrade", strconv.Itoa(o), "main")
			leasesAfter(ctx, t, dsn, version, held, last, fmt.Sprintf("pg_upgradecluster %d to %d", o, n))
		})
	}
}

func pgUpgrade(t *testing.T, oldInst, inst pgserver.Install, version string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, i := range []pgserver.Install{oldInst, inst} {
		if err := pgserver.InstallFiles(model.PgLease, pglease.Files, i); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := os.MkdirTemp("", "pglease-pgupgrade-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	old, err := pgserver.StartWith(ctx, oldInst, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Remove()
	held, last := leasesBefore(ctx, t, old.DSN, version)
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
	leasesAfter(ctx, t, next.DSN, version, held, last, fmt.Sprintf("pg_upgrade %d to %d", oldInst.Major, inst.Major))
}

// leasesBefore makes database db with pg_lease version on the server
// whose DSNs dsn gives, holds the lease "held" and cycles "free": the
// epoch held and the highest epoch given.
func leasesBefore(ctx context.Context, t *testing.T, dsn func(string) string, version string) (held, last int64) {
	t.Helper()
	if err := pgserver.Exec(ctx, dsn("postgres"), "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	if err := pgserver.Exec(ctx, dsn(db), "CREATE EXTENSION pg_lease VERSION '"+version+"'", testenv.FencingOnly); err != nil {
		t.Fatal(err)
	}
	if err := queryRow(ctx, dsn(db), "SELECT epoch FROM lease.acquire('held', 'a', interval '1 hour')", &held); err != nil {
		t.Fatal(err)
	}
	last = held
	for i := range 3 {
		var e int64
		if err := queryRow(ctx, dsn(db), "SELECT epoch FROM lease.acquire('free', 'w"+strconv.Itoa(i)+"', interval '1 hour')", &e); err != nil {
			t.Fatal(err)
		}
		if err := pgserver.Exec(ctx, dsn(db), "SELECT lease.release('free', 'w"+strconv.Itoa(i)+"', "+strconv.FormatInt(e, 10)+")"); err != nil {
			t.Fatal(err)
		}
		last = max(last, e+1)
	}
	return held, last
}

// leasesAfter checks db after the upgrade (what): 0.3.0 fails every
// acquire until ALTER EXTENSION pg_lease UPDATE; then the lease held
// before renews and releases with its epoch, and new grants lie above
// last, in a new generation.
func leasesAfter(ctx context.Context, t *testing.T, dsn func(string) string, version string, held, last int64, what string) {
	t.Helper()
	epoch := func(sql string) (int64, error) {
		var e int64
		err := queryRow(ctx, dsn(db), sql, &e)
		return e, err
	}
	if version == "0.3.0" {
		_, err := epoch("SELECT epoch FROM lease.acquire('free', 'x', interval '1 hour')")
		if err == nil || !strings.Contains(err.Error(), "bigint out of range") {
			t.Fatalf("0.3.0 after %s: acquire gave %v; want 0.3.0's bigint out of range", what, err)
		}
		t.Logf("0.3.0 after %s: %v; updating", what, err)
		if err := pgserver.Exec(ctx, dsn(db), "ALTER EXTENSION pg_lease UPDATE"); err != nil {
			t.Fatal(err)
		}
	}
	if err := pgserver.Exec(ctx, dsn(db), "DO $$ BEGIN IF (SELECT status FROM lease.renew('held', 'a', "+strconv.FormatInt(held, 10)+", interval '1 hour')) <> 'ok' THEN RAISE 'held lease lost'; END IF; END $$"); err != nil {
		t.Fatalf("the lease held across %s: %v", what, err)
	}
	e, err := epoch("SELECT epoch FROM lease.acquire('free', 'x', interval '1 hour')")
	if err != nil {
		t.Fatal(err)
	}
	n, err := epoch("SELECT epoch FROM lease.acquire('new', 'x', interval '1 hour')")
	if err != nil {
		t.Fatal(err)
	}
	var gen int64
	if err := queryRow(ctx, dsn(db), "SELECT generation FROM lease.current_era()", &gen); err != nil {
		t.Fatal(err)
	}
	if e <= last || n <= last || gen < 1 {
		t.Errorf("after %s: free granted at %d, a new name at %d (generation %d); the last epoch before was %d", what, e, n, gen, last)
	}
	var status string
	if err := queryRow(ctx, dsn(db), "SELECT lease.release('held', 'a', "+strconv.FormatInt(held, 10)+")", &status); err != nil || status != "ok" {
		t.Errorf("release of the held lease: %q, %v", status, err)
	}
	t.Logf("%s, %s: before it epochs up to %d; after it %d and %d, generation %d", version, what, last, e, n, gen)
}
