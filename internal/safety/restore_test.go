package safety

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
)

// installerRoundTrip: the installer (CREATE on two databases) installs
// version in the first, gives a name two holders (epoch 2) and a session a
// name, dumps it with pg_dump and restores it into the second with
// pg_restore, both as itself. It returns the first error of the dump or
// the restore, or else the restored database's connection.
func installerRoundTrip(t *testing.T, srv *pgserver.Server, prefix, version string) (*pgx.Conn, error) {
	t.Helper()
	ctx := context.Background()
	role, src, dst := prefix+"_installer", prefix+"_src", prefix+"_dst"
	mustExec(t, srv.DSN("postgres"), "CREATE ROLE "+role+" LOGIN",
		"CREATE DATABASE "+src, "GRANT CREATE ON DATABASE "+src+" TO "+role,
		"CREATE DATABASE "+dst, "GRANT CREATE ON DATABASE "+dst+" TO "+role)
	conn := connectAs(t, srv.DSN(src), role)
	for _, sql := range []string{
		"CREATE EXTENSION " + model.PgLease.Name + " VERSION '" + version + "'",
		"SELECT lease.set_max_ttl(interval '3 seconds')",
		"SELECT * FROM lease.acquire('n', 'a', interval '3 seconds')",
		"SELECT lease.release('n', 'a', 1)",
		"SELECT * FROM lease.acquire('n', 'b', interval '3 seconds')",
		"SELECT * FROM lease.session_acquire((SELECT session FROM lease.open_session('s', interval '3 seconds')), 's', 'm')",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	file := filepath.Join(srv.Dir, prefix+".dump") // (pg_dump runs as the server's user)
	if err := srv.DumpAs(ctx, role, src, file); err != nil {
		return nil, err
	}
	if err := srv.RestoreAs(ctx, role, dst, file); err != nil {
		return nil, err
	}
	return connectAs(t, srv.DSN(dst), role), nil
}

// TestInstallerDumpRestoreKeepsEpochs: the installer's own pg_dump and
// pg_restore carry every row of the state: the restored database shows
// the name at epoch 2 and the session's name; its first grant comes after
// the grace and above every epoch of the source; and once it has granted,
// the installer can no longer write the tables. 0.5.0, the broken variant,
// cannot even be dumped by its installer (permission denied for sequence
// session_ids); restored from a superuser's dump by the installer it lost
// the rows and gave epoch 1 again.
func TestInstallerDumpRestoreKeepsEpochs(t *testing.T) {
	srv, _ := server(t)
	ctx := context.Background()
	conn, err := installerRoundTrip(t, srv, "rt_new", model.PgLease.Version())
	if err != nil {
		t.Fatalf("%s: the installer's dump and restore: %v", model.PgLease.Version(), err)
	}
	var owner string
	var epoch int64
	if err := conn.QueryRow(ctx, "SELECT owner, epoch FROM lease.inspect('n')").Scan(&owner, &epoch); err != nil || owner != "b" || epoch != 2 {
		t.Errorf("restored: n is %q at %d (%v); want b at 2", owner, epoch, err)
	}
	var inSession string
	if err := conn.QueryRow(ctx, "SELECT owner FROM lease.inspect('m')").Scan(&inSession); err != nil || inSession != "s" {
		t.Errorf("restored: the session's name m is %q (%v); want s's", inSession, err)
	}
	// the first grant: refused in the grace, then above the source's epochs
	var acquired bool
	var until time.Time
	if err := conn.QueryRow(ctx, "SELECT acquired, expires_at FROM lease.acquire('fresh', 'c', interval '3 seconds')").Scan(&acquired, &until); err != nil {
		t.Fatal(err)
	}
	if acquired {
		t.Errorf("the restored database granted at once: no grace after the restore")
	}
	time.Sleep(time.Until(until) + 100*time.Millisecond)
	if err := conn.QueryRow(ctx, "SELECT acquired, epoch FROM lease.acquire('n', 'c', interval '3 seconds')").Scan(&acquired, &epoch); err != nil {
		t.Fatal(err)
	}
	if !acquired || epoch <= 2 {
		t.Errorf("after the grace, n went to c: %v at epoch %d; want it granted above 2", acquired, epoch)
	}
	t.Logf("%s: restored by the installer, the first grant after the grace gave n epoch %d", model.PgLease.Version(), epoch)
	_, err = conn.Exec(ctx, "INSERT INTO lease.leases (name, owner, epoch, expires_at) VALUES ('forged', 'x', 1, now() + interval '1 hour')")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" {
		t.Errorf("the installer's own row after the first grant: %v; want 42501", err)
	}

	_, err = installerRoundTrip(t, srv, "rt_old", "0.5.0")
	t.Logf("0.5.0: %v", err)
	if err == nil {
		t.Errorf("0.5.0's installer dumped and restored it: the test proves nothing")
	}
}

// TestInstallerWritesEndWhenTheDatabaseGrants: the installer may write the
// state tables only for its own restore into a database that has never
// granted. In a fresh install it still may (its restore's COPY); the first
// grant takes that away. A 0.5.0 database that granted before its update
// to the current version is not writable by its installer after it.
func TestInstallerWritesEndWhenTheDatabaseGrants(t *testing.T) {
	srv, inst := server(t)
	ctx := context.Background()
	// the broken variant: the first grant leaves the installer's INSERT
	installVariant(t, inst, "pg_lease_keepwrites")
	forge := func(conn *pgx.Conn, name string) error {
		_, err := conn.Exec(ctx, "INSERT INTO lease.leases (name, owner, epoch, expires_at) VALUES ($1, 'x', 1, now() + interval '1 hour')", name)
		return err
	}
	denied := func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == "42501"
	}
	afterGrant := func(db, ext string) error {
		conn := installerSession(t, srv.DSN("postgres"), db, ext)
		if err := forge(conn, "restored"); err != nil {
			t.Fatalf("%s, a fresh install: the installer's row (its restore's COPY): %v", ext, err)
		}
		if _, err := conn.Exec(ctx, "SELECT * FROM lease.acquire('n', 'a', interval '3 seconds')"); err != nil {
			t.Fatal(err)
		}
		return forge(conn, "forged")
	}
	if err := afterGrant("wr_broken", "pg_lease_keepwrites"); err != nil {
		t.Fatalf("the broken variant refused the installer's row after the first grant (%v): the test proves nothing", err)
	}
	if err := afterGrant("wr_fresh", model.PgLease.Name); !denied(err) {
		t.Errorf("after the first grant, the installer's own row: %v; want 42501", err)
	}

	mustExec(t, srv.DSN("postgres"), "CREATE ROLE wr_old_installer LOGIN", "CREATE DATABASE wr_old",
		"GRANT CREATE ON DATABASE wr_old TO wr_old_installer")
	old := connectAs(t, srv.DSN("wr_old"), "wr_old_installer")
	for _, sql := range []string{
		"CREATE EXTENSION " + model.PgLease.Name + " VERSION '0.5.0'",
		"SELECT * FROM lease.acquire('n', 'a', interval '3 seconds')",
		"ALTER EXTENSION " + model.PgLease.Name + " UPDATE",
	} {
		if _, err := old.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if err := forge(old, "forged"); !denied(err) {
		t.Errorf("updated after it granted, the installer's own row: %v; want 42501", err)
	}
	var n int
	if err := old.QueryRow(ctx, "SELECT count(*) FROM lease.leases").Scan(&n); err != nil || n != 1 {
		t.Errorf("updated: the installer reads %d rows (%v); want its pg_dump's read of 1", n, err)
	}
}
