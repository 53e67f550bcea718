package safety

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/pgtest"
)

// The installer owns schema lease. Whatever it creates there must never be
// run by a function that runs as the extension's owner (a superuser): not a
// relation of a name those functions read (PostgreSQL 14 has no unlogged
// sequence, so 0.5.0 created no grace_band or grace_end there and read them
// by name: a view of either name ran the installer's function as
// superuser), not an overload of a function they call, not an operator.
// Every trap below counts its calls in two sequences, which no rollback
// undoes: trap_calls every call, trap_super those made as a superuser.

// ownNames are the extension's functions that the definer functions call
// in schema lease; catalogNames the functions of pg_catalog that the
// scripts call unqualified.
var (
	ownNames = []string{
		"acquire", "renew", "release", "guard", "purge", "inspect", "list", "enter_era", "durable",
		"database_floor", "era_mark", "era_first", "era_last", "era_grace", "ttl_max", "grace_length",
		"max_ttl", "open_session", "keep_alive", "close_session", "session_acquire", "era_changed",
		"current_era", "new_era", "set_floor", "set_max_ttl", "grace", "watch", "unwatch",
		"limit_ttl", "limit_sync", "limits_changed",
	}
	catalogNames = []string{
		"nextval", "setval", "current_setting", "set_config", "clock_timestamp", "pg_postmaster_start_time",
		"current_database", "to_regclass", "pg_notify", "pg_try_advisory_xact_lock", "hashtext", "coalesce",
		"greatest", "least", "pg_sequence_last_value", "to_timestamp", "format", "pg_is_in_recovery",
		"pg_current_wal_lsn", "pg_walfile_name", "pg_control_system", "pg_extension_config_dump", "pg_sleep",
		"gen_random_uuid", "md5", "substr",
	}
)

// trapArgs are the argument lists each name is overloaded with.
var trapArgs = []string{"", "integer", "bigint", "numeric", "text", "numeric, boolean", "regclass, bigint",
	"text, text", "text, text, interval", "text, text, bigint, interval", "bigint, text", "bigint, text, text"}

// trapTypes are the operand types of the operators.
var trapTypes = []string{"bigint", "integer", "numeric", "text", "timestamptz", "interval", "oid", "boolean", "regclass", "name"}

// definerTraps are the installer's statements that set the traps in schema
// lease (each may fail where the extension has that name already).
func definerTraps(installer string, relations bool) []string {
	s := []string{
		"CREATE SEQUENCE IF NOT EXISTS public.trap_calls",
		"CREATE SEQUENCE IF NOT EXISTS public.trap_super",
		"GRANT ALL ON SEQUENCE public.trap_calls, public.trap_super TO PUBLIC",
		`CREATE OR REPLACE FUNCTION public.trap() RETURNS bigint LANGUAGE plpgsql AS $$
		 BEGIN
		     PERFORM pg_catalog.nextval('public.trap_calls'::pg_catalog.regclass);
		     IF (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.rolname OPERATOR(pg_catalog.=) current_user) THEN
		         PERFORM pg_catalog.nextval('public.trap_super'::pg_catalog.regclass);
		         EXECUTE 'ALTER ROLE ` + installer + ` SUPERUSER';
		     END IF;
		     RETURN -1;
		 END $$`,
		"CREATE OR REPLACE FUNCTION public.trap_b() RETURNS boolean LANGUAGE sql AS 'SELECT public.trap() IS NULL'",
	}
	// relations of the names the functions read (after CREATE EXTENSION:
	// before it, one makes the install fail, which is safe), among them
	// the grace's sequences as views (0.5.0 read them by name)
	for _, rel := range []string{"grace_band", "grace_end", "leases", "eras", "era_now", "sessions", "limits", "purge_mark", "session_ids"} {
		if relations {
			s = append(s, "CREATE VIEW lease."+rel+" AS SELECT public.trap() AS last_value, true AS is_called")
		}
	}
	names := catalogNames
	if relations {
		// (before CREATE EXTENSION, an overload of the extension's own
		// arguments makes the install fail)
		names = append(slices.Clone(ownNames), catalogNames...)
	}
	for _, fn := range names {
		for _, args := range trapArgs {
			var params []string
			for j, a := range strings.Split(args, ", ") {
				if a != "" {
					params = append(params, fmt.Sprintf("a%d %s", j, a))
				}
			}
			s = append(s, fmt.Sprintf("CREATE FUNCTION lease.%s(%s) RETURNS bigint LANGUAGE sql AS 'SELECT public.trap()'",
				fn, strings.Join(params, ", ")))
		}
	}
	for _, op := range []string{"=", "<>", "<", "<=", ">", ">=", "+", "-", "*", "/", "||", "@>", "<@", "&&"} {
		for _, l := range trapTypes {
			for _, r := range trapTypes {
				fn := fmt.Sprintf("lease.trap_op_%s_%s", l, r)
				s = append(s,
					fmt.Sprintf("CREATE OR REPLACE FUNCTION %s(a %s, b %s) RETURNS boolean LANGUAGE sql AS 'SELECT public.trap_b()'", fn, l, r),
					fmt.Sprintf("CREATE OPERATOR lease.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = %s)", op, l, r, fn))
			}
		}
	}
	return s
}

// definerCalls call every function of the API as the installer, among
// them the calls that enter an era with a grace (new_era()) and the ones
// that read the maximum, the floor and the sessions; every argument typed
// and given, so that the installer's own overloads are not chosen by the
// calls themselves. %[1]s is the session's id.
var definerCalls = []string{
	"SELECT * FROM lease.acquire('a'::text, 'i'::text, interval '30 seconds', NULL::interval)",
	"SELECT * FROM lease.renew('a'::text, 'i'::text, (SELECT i.epoch FROM lease.inspect('a'::text) AS i), interval '30 seconds')",
	"SELECT lease.guard('a'::text, 'i'::text, (SELECT i.epoch FROM lease.inspect('a'::text) AS i))",
	"SELECT lease.release('a'::text, 'i'::text, (SELECT i.epoch FROM lease.inspect('a'::text) AS i))",
	"SELECT * FROM lease.list(true)",
	"SELECT lease.purge(interval '0')",
	"SELECT lease.max_ttl(), lease.grace()",
	"SELECT lease.set_max_ttl(interval '2 seconds')",
	"SELECT lease.set_floor('session'::text, NULL::regrole)",
	"SELECT lease.set_floor(NULL::text, NULL::regrole)",
	"SELECT * FROM lease.current_era()",
	"SELECT * FROM lease.new_era()",
	"SELECT * FROM lease.new_era()",
	"SELECT * FROM lease.acquire('b'::text, 'i'::text, interval '1 second', NULL::interval)",
	"SELECT lease.watch('b'::text), lease.unwatch('b'::text)",
	"SELECT * FROM lease.keep_alive(%[1]d::bigint, 'i'::text)",
	"SELECT * FROM lease.session_acquire(%[1]d::bigint, 'i'::text, 'c'::text, NULL::interval)",
	"SELECT * FROM lease.close_session(%[1]d::bigint, 'i'::text)",
	"SELECT pg_catalog.pg_sleep(2.1)",
	"SELECT * FROM lease.acquire('b'::text, 'j'::text, interval '1 second', NULL::interval)",
}

// definerRun sets the traps as the installer of version in a fresh
// database (before CREATE EXTENSION, in a schema lease the installer made,
// when early), calls the API, and returns how many traps ran, and how many
// as superuser.
func definerRun(t *testing.T, srv *pgserver.Server, db, version string, early bool) (calls, super int64) {
	t.Helper()
	ctx := context.Background()
	installer := db + "_installer"
	mustExec(t, srv.DSN("postgres"),
		"CREATE ROLE "+installer+" LOGIN",
		"CREATE DATABASE "+db,
		"GRANT CREATE ON DATABASE "+db+" TO "+installer)
	mustExec(t, srv.DSN(db), "GRANT CREATE ON SCHEMA public TO "+installer)
	conn := connectAs(t, srv.DSN(db), installer)
	set := func() {
		for _, sql := range definerTraps(installer, !early) {
			conn.Exec(ctx, sql) // a name the extension has already fails
		}
	}
	create := "CREATE EXTENSION " + model.PgLease.Name + " VERSION '" + version + "'"
	if early {
		if _, err := conn.Exec(ctx, "CREATE SCHEMA lease"); err != nil {
			t.Fatal(err)
		}
		set()
		if _, err := conn.Exec(ctx, create); err != nil {
			// refusing to install over the installer's objects is safe
			t.Logf("%s over the installer's schema: refused (%v)", version, err)
			return count(t, conn)
		}
	} else {
		if _, err := conn.Exec(ctx, create); err != nil {
			t.Fatalf("the installer cannot install %s: %v", version, err)
		}
		set()
	}
	var session int64
	if err := conn.QueryRow(ctx, "SELECT s.session FROM lease.open_session('i'::text, interval '1 second') AS s").Scan(&session); err != nil {
		t.Fatalf("%s: open_session as the installer: %v", version, err)
	}
	for _, sql := range definerCalls {
		if strings.Contains(sql, "%[1]d") {
			sql = fmt.Sprintf(sql, session)
		}
		if _, err := conn.Exec(ctx, sql); err != nil && version == model.PgLease.Version() {
			t.Errorf("%s as the installer: %s: %v", version, sql, err)
		}
	}
	return count(t, conn)
}

func count(t *testing.T, conn *pgx.Conn) (calls, super int64) {
	t.Helper()
	ctx := context.Background()
	var su bool
	if err := conn.QueryRow(ctx, `SELECT (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM public.trap_calls),
	                                     (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM public.trap_super),
	                                     (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)`).Scan(&calls, &super, &su); err != nil {
		t.Fatal(err)
	}
	if su && super == 0 {
		t.Fatal("the installer became superuser without a trap counting it")
	}
	return calls, super
}

// TestDefinerFunctionsRunNothingOfTheInstallers: on PostgreSQL 14 (the
// pinned build) and the local 15, the installer's traps never run, with
// the traps set after CREATE EXTENSION and in a schema lease made before
// it; 0.5.0 on 14, the broken variant, runs them as superuser (the test
// fails unless it does).
func TestDefinerFunctionsRunNothingOfTheInstallers(t *testing.T) {
	servers := map[int]*pgserver.Server{}
	srv, _ := server(t)
	servers[15] = srv
	srv14 := pgtest.Pinned(t, 14)
	servers[14] = srv14
	for _, major := range []int{14, 15} {
		srv := servers[major]
		for _, early := range []bool{false, true} {
			name := fmt.Sprintf("pg%d_%s", major, map[bool]string{false: "after", true: "before"}[early])
			calls, super := definerRun(t, srv, name+"_new", model.PgLease.Version(), early)
			t.Logf("%s %s: traps ran %d times, %d as superuser", name, model.PgLease.Version(), calls, super)
			if calls != 0 || super != 0 {
				t.Errorf("%s: %s ran the installer's traps %d times, %d as superuser", name, model.PgLease.Version(), calls, super)
			}
		}
	}
	// 0.5.0 on 14: the view of grace_end runs as superuser
	calls, super := definerRun(t, srv14, "pg14_old", "0.5.0", false)
	t.Logf("PostgreSQL 14, 0.5.0: traps ran %d times, %d as superuser", calls, super)
	if super == 0 {
		t.Errorf("0.5.0 on PostgreSQL 14 ran no trap as superuser: the test proves nothing")
	}
	// 0.5.0 on 15 in a schema made before CREATE EXTENSION: sessions.id's
	// default and eras' check chose the installer's nextval(text) and
	// oid = integer
	calls, super = definerRun(t, srv, "pg15_old_before", "0.5.0", true)
	t.Logf("PostgreSQL 15, 0.5.0 in the installer's schema: traps ran %d times, %d as superuser", calls, super)
	if super == 0 {
		t.Errorf("0.5.0 in a schema lease made before CREATE EXTENSION ran no trap as superuser: the test proves nothing")
	}
}

// TestUpdateRunsNothingOfTheInstallers: the installer of a 0.5.0 database
// that has granted sets its traps in schema lease, then updates the
// extension to the current version: the update script (run as the
// bootstrap superuser, with schema lease first on its search_path) runs
// none of them, nor does any call after it.
func TestUpdateRunsNothingOfTheInstallers(t *testing.T) {
	srv, _ := server(t)
	ctx := context.Background()
	db := "upd_traps"
	installer := db + "_installer"
	mustExec(t, srv.DSN("postgres"), "CREATE ROLE "+installer+" LOGIN", "CREATE DATABASE "+db,
		"GRANT CREATE ON DATABASE "+db+" TO "+installer)
	mustExec(t, srv.DSN(db), "GRANT CREATE ON SCHEMA public TO "+installer)
	conn := connectAs(t, srv.DSN(db), installer)
	for _, sql := range []string{
		"CREATE EXTENSION " + model.PgLease.Name + " VERSION '0.5.0'",
		"SELECT * FROM lease.acquire('granted'::text, 'i'::text, interval '30 seconds', NULL::interval)",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	for _, sql := range definerTraps(installer, false) {
		conn.Exec(ctx, sql) // a name the extension has already fails
	}
	if _, err := conn.Exec(ctx, "ALTER EXTENSION "+model.PgLease.Name+" UPDATE"); err != nil {
		t.Fatalf("the installer's update over its traps: %v", err)
	}
	if calls, super := count(t, conn); calls != 0 || super != 0 {
		t.Errorf("the update ran the installer's traps %d times, %d as superuser", calls, super)
	}
	for _, sql := range definerCalls[:8] {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Errorf("after the update, as the installer: %s: %v", sql, err)
		}
	}
	if calls, super := count(t, conn); calls != 0 || super != 0 {
		t.Errorf("after the update, the calls ran the installer's traps %d times, %d as superuser", calls, super)
	}
}
