package safety

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pglease/pglease-gen/internal/leaseclient"
)

// The installer's attack: install the trusted extension as a non-superuser
// with CREATE on the database, rename the extension's schema, create a
// schema of the old name with a table "leases" whose trigger records who
// runs it, and call a SECURITY DEFINER function, which finds the table by
// its schema's name and runs as the bootstrap superuser.
var attack = []string{
	"ALTER SCHEMA lease RENAME TO lease_moved",
	"CREATE SCHEMA lease",
	"CREATE TABLE public.attack_log (who text, superuser boolean)",
	`CREATE TABLE lease.leases (name text PRIMARY KEY, owner text, epoch bigint, expires_at timestamptz, band bigint, session_id bigint)`,
	`CREATE TABLE lease.purge_mark (id boolean PRIMARY KEY, epoch bigint)`,
	// 0.4.0's era table and helpers, which the functions also find by the
	// schema's name
	`CREATE TABLE lease.era_now (band bigint, boot timestamptz, first_epoch bigint, last_epoch bigint, database_oid oid, grace_until timestamptz)`,
	`INSERT INTO lease.era_now SELECT 0, pg_postmaster_start_time(), 1, 4294967296, d.oid FROM pg_database AS d WHERE d.datname = current_database()`,
	`CREATE FUNCTION lease.enter_era(numeric, boolean DEFAULT false) RETURNS bigint LANGUAGE sql AS 'SELECT 0::bigint'`,
	`CREATE FUNCTION lease.durable() RETURNS void LANGUAGE sql AS ''`,
	`CREATE FUNCTION lease.database_floor() RETURNS text LANGUAGE sql AS 'SELECT ''on''::text'`,
	`CREATE FUNCTION lease.era_mark() RETURNS bigint LANGUAGE sql AS 'SELECT 0::bigint'`,
	`CREATE FUNCTION lease.era_first(bigint) RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'`,
	`CREATE FUNCTION lease.era_last(bigint) RETURNS bigint LANGUAGE sql AS 'SELECT 4294967296::bigint'`,
	// and 0.5.0's
	`CREATE TABLE lease.sessions (id bigint PRIMARY KEY, owner text, ttl interval, expires_at timestamptz)`,
	`CREATE FUNCTION lease.ttl_max(bigint) RETURNS interval LANGUAGE sql AS 'SELECT NULL::interval'`,
	// and 0.5.1's
	`CREATE FUNCTION lease.limit_ttl() RETURNS interval LANGUAGE sql AS 'SELECT NULL::interval'`,
	`CREATE FUNCTION lease.era_grace(bigint) RETURNS timestamptz LANGUAGE sql AS 'SELECT NULL::timestamptz'`,
	`CREATE FUNCTION public.attack() RETURNS trigger LANGUAGE plpgsql AS $$
	 BEGIN
	     INSERT INTO public.attack_log SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user;
	     RETURN NEW;
	 END $$`,
	"CREATE TRIGGER attack BEFORE INSERT OR UPDATE ON lease.leases FOR EACH ROW EXECUTE FUNCTION public.attack()",
	"SELECT * FROM lease_moved.acquire('x', 'attacker', interval '1 minute')",
}

// installerSession creates the installer role and returns its connection
// to a fresh database in which it installed ext.
func installerSession(t *testing.T, dsn, db, ext string) *pgx.Conn {
	t.Helper()
	mustExec(t, dsn,
		"CREATE ROLE "+db+"_installer LOGIN",
		"CREATE DATABASE "+db,
		"GRANT CREATE ON DATABASE "+db+" TO "+db+"_installer")
	mustExec(t, strings.Replace(dsn, "dbname=postgres", "dbname="+db, 1), "GRANT CREATE ON SCHEMA public TO "+db+"_installer")
	conn := connectAs(t, strings.Replace(dsn, "dbname=postgres", "dbname="+db, 1), db+"_installer")
	if _, err := conn.Exec(context.Background(), "CREATE EXTENSION "+ext); err != nil {
		t.Fatalf("the installer cannot install %s: %v", ext, err)
	}
	return conn
}

func TestInstallerCannotRunCodeAsSuperuser(t *testing.T) {
	srv, inst := server(t)
	ctx := context.Background()

	// Without the guard the attack works: this is what the guard is for.
	installVariant(t, inst, "pg_lease_unguarded")
	conn := installerSession(t, srv.DSN("postgres"), "unguarded", "pg_lease_unguarded")
	for _, sql := range attack {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("unguarded: %s: %v", sql, err)
		}
	}
	var who string
	var super bool
	if err := conn.QueryRow(ctx, "SELECT who, superuser FROM public.attack_log").Scan(&who, &super); err != nil || !super {
		t.Fatalf("the unguarded variant did not let the attack run as superuser (%v, %q, %v): the test proves nothing", err, who, super)
	}
	t.Logf("without the guard the installer's trigger ran as %s (superuser %v)", who, super)

	// With the guard, the first step is refused and nothing runs.
	conn = installerSession(t, srv.DSN("postgres"), "guarded", "pg_lease")
	_, err := conn.Exec(ctx, attack[0])
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" || !strings.Contains(pe.Message, "cannot be renamed") {
		t.Fatalf("renaming the schema: %v; want 42501 cannot be renamed", err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = 'lease_moved'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the schema was renamed anyway (%v)", err)
	}
	// the rest of the attack cannot even begin: there is a schema lease already
	if _, err := conn.Exec(ctx, attack[1]); err == nil {
		t.Error("created a second schema lease")
	}
	// and the API still works for the installer
	if g, err := leaseclient.Acquire(ctx, conn, "x", "installer", time.Minute, nil); err != nil || !g.Acquired {
		t.Errorf("acquire after the refused attack: %+v %v", g, err)
	}
}

// TestOtherRolesAreRefused: PUBLIC cannot read or write the table; the
// installer reads it (for its own pg_dump, 0.5.1) but, once the database
// has granted, cannot write it; a role whose EXECUTE a DBA revoked is
// refused.
func TestOtherRolesAreRefused(t *testing.T) {
	srv, _ := server(t)
	ctx := context.Background()
	conn := installerSession(t, srv.DSN("postgres"), "roles", "pg_lease")
	dsn := strings.Replace(srv.DSN("postgres"), "dbname=postgres", "dbname=roles", 1)
	mustExec(t, dsn, "CREATE ROLE roles_app LOGIN", "CREATE ROLE roles_other LOGIN",
		"REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA lease FROM PUBLIC",
		"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA lease TO roles_app",
		"SELECT lease.acquire('first', 'superuser', interval '10 seconds')")
	for _, role := range []string{"roles_installer", "roles_other"} {
		for _, sql := range []string{
			"SELECT count(*) FROM lease.leases",
			"INSERT INTO lease.leases VALUES ('x', 'y', 1, now())",
			"UPDATE lease.leases SET epoch = epoch + 1",
			"DELETE FROM lease.leases",
		} {
			_, err := conn.Exec(ctx, "SET ROLE "+role+"; "+sql)
			var pe *pgconn.PgError
			if role == "roles_installer" && strings.HasPrefix(sql, "SELECT") {
				if err != nil {
					t.Errorf("%s: %s: %v; want it read (its own pg_dump reads it)", role, sql, err)
				}
			} else if !errors.As(err, &pe) || pe.Code != "42501" {
				t.Errorf("%s: %s: %v; want 42501", role, sql, err)
			}
			conn.Exec(ctx, "RESET ROLE")
		}
	}
	cfg, _ := pgx.ParseConfig(dsn)
	cfg.User = "roles_other"
	other, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	_, err = leaseclient.Acquire(ctx, other, "x", "other", time.Minute, nil)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" {
		t.Errorf("a role without EXECUTE: %v; want 42501", err)
	}
	cfg.User = "roles_app"
	app, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(ctx)
	if g, err := leaseclient.Acquire(ctx, app, "x", "app", time.Minute, nil); err != nil || !g.Acquired {
		t.Errorf("the granted role: %+v %v", g, err)
	}
}

// The installer owns the schema lease, so it can add functions to it.
// acquire and new_era call enter_era() with its exact argument types, so
// an overload the installer adds (here enter_era(bigint), which an uncast
// bigint argument would choose over enter_era(numeric, boolean)) is never
// what runs as the functions' owner, a superuser. The variant with the
// uncast call shows that the attack works without that.
func TestInstallerOverloadRunsNothing(t *testing.T) {
	srv, inst := server(t)
	ctx := context.Background()
	installVariant(t, inst, "pg_lease_uncast")
	for _, c := range []struct {
		ext  string
		safe bool
	}{{"pg_lease", true}, {"pg_lease_uncast", false}} {
		t.Run(c.ext, func(t *testing.T) {
			conn := installerSession(t, srv.DSN("postgres"), "overload_"+c.ext, c.ext)
			for _, sql := range []string{
				"CREATE TABLE public.attack_log (who text, superuser boolean)",
				// it enters the era itself, so that the call completes and
				// its transaction commits with the log
				`CREATE FUNCTION lease.enter_era(bigint) RETURNS bigint LANGUAGE plpgsql AS $$
				 BEGIN
				     INSERT INTO public.attack_log SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user;
				     RETURN lease.enter_era($1::numeric, false);
				 END $$`,
				// a fresh database's first grant enters the era
				"SELECT acquired FROM lease.acquire('x', 'attacker', interval '1 minute')",
			} {
				if _, err := conn.Exec(ctx, sql); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			var runs int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM public.attack_log WHERE superuser").Scan(&runs); err != nil {
				t.Fatal(err)
			}
			switch {
			case c.safe && runs > 0:
				t.Errorf("the installer's enter_era(bigint) ran as a superuser %d times", runs)
			case !c.safe && runs == 0:
				t.Errorf("the uncast variant did not run the installer's overload: the test proves nothing")
			}
		})
	}
}
