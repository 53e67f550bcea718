package safety

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
)

// TestUpdateKeepsTheOperatorsGrants: an operator narrows a 0.5.0
// database's API as docs/extension.md says (EXECUTE taken from PUBLIC on
// every function, given by name to an application role, set_max_ttl
// given to an operations role), then updates it to the current version.
// Every function keeps the privileges the operator gave and took, the
// application's calls go on working, another role's are refused, and a
// pg_dump of the updated database restores them all. The broken variant,
// the update without its carry of privileges, made every function it
// makes again (keep_alive's result gained a column, acquire's, renew's and
// session_acquire's became row types, set_max_ttl gained an argument)
// PUBLIC's again and the application's no more; carried, but into
// pg_init_privs too, they were lost in a dump and restore.
func TestUpdateKeepsTheOperatorsGrants(t *testing.T) {
	srv, inst := server(t)
	from, to := "0.5.0", model.PgLease.Version()
	// the broken variants: the update without its carries of privileges,
	// and with them but leaving what pg_dump compares with the carried
	// privileges (a restore gave PUBLIC its EXECUTE back)
	variants := []struct{ ext, db, what string }{ // (variants_test.go)
		{"pg_lease_nocarry", "grants_nocarry", "without the carry"},
		{"pg_lease_initprivs", "grants_initprivs", "carrying, but into pg_init_privs too"},
	}
	for _, v := range variants {
		installVariant(t, inst, v.ext)
		broken := updateWithGrants(t, srv, v.db, v.ext, from, to)
		if len(broken) == 0 {
			t.Fatalf("the update %s kept every privilege: the test proves nothing", v.what)
		}
		t.Logf("the update %s: %s", v.what, strings.Join(broken, "; "))
	}
	if problems := updateWithGrants(t, srv, "grants", model.PgLease.Name, from, to); len(problems) > 0 {
		t.Errorf("after the update:\n%s", strings.Join(problems, "\n"))
	}
}

// updateWithGrants installs ext at from in a new database db, narrows its
// API, updates it to to and says what differs from the privileges before
// the update, in the database and in its restored dump, and what the
// application and another role could call.
func updateWithGrants(t *testing.T, srv *pgserver.Server, db, ext, from, to string) []string {
	t.Helper()
	ctx := context.Background()
	app, other, ops := db+"_app", db+"_other", db+"_ops"
	mustExec(t, srv.DSN("postgres"), "CREATE ROLE "+app+" LOGIN", "CREATE ROLE "+other+" LOGIN", "CREATE ROLE "+ops+" LOGIN",
		"CREATE DATABASE "+db)
	mustExec(t, srv.DSN(db), "CREATE EXTENSION "+ext+" VERSION '"+from+"'",
		"REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA lease FROM PUBLIC",
		// the calls docs/extension.md grants, by name (each one 0.5.0 has)
		`DO $$ BEGIN EXECUTE (SELECT 'GRANT EXECUTE ON FUNCTION ' || string_agg(p.oid::regprocedure::text, ', ') || ' TO `+app+`'
		   FROM pg_proc p WHERE p.pronamespace = 'lease'::regnamespace AND p.proname IN ('acquire', 'renew', 'release',
		   'inspect', 'list', 'guard', 'watch', 'unwatch', 'open_session', 'session_acquire', 'keep_alive', 'close_session',
		   'current_era', 'grace', 'max_ttl', 'database_floor')); END $$`,
		"GRANT EXECUTE ON FUNCTION lease.set_max_ttl(interval) TO "+ops+" WITH GRANT OPTION")
	before := privileges(t, srv.DSN(db))
	mustExec(t, srv.DSN(db), "ALTER EXTENSION "+ext+" UPDATE TO '"+to+"'")
	after := privileges(t, srv.DSN(db))
	var problems []string
	for fn, acl := range before {
		if got, ok := after[fn]; ok && got != acl {
			problems = append(problems, fmt.Sprintf("%s: %s before the update, %s after", fn, acl, got))
		}
	}

	conn := connectAs(t, srv.DSN(db), app)
	for _, sql := range []string{
		"SELECT * FROM lease.acquire('n', 'a', interval '10 seconds')",
		"SELECT * FROM lease.renew('n', 'a', 1, interval '10 seconds')",
		"SELECT * FROM lease.keep_alive((SELECT session FROM lease.open_session('s', interval '10 seconds')), 's')",
		"SELECT * FROM lease.session_acquire((SELECT session FROM lease.open_session('t', interval '10 seconds')), 't', 'm')",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			problems = append(problems, fmt.Sprintf("the application's %s: %v", sql, err))
		}
	}
	denied := connectAs(t, srv.DSN(db), other)
	for _, sql := range []string{
		"SELECT * FROM lease.acquire('o', 'b', interval '10 seconds')",
		"SELECT * FROM lease.keep_alive(1, 'b')",
		"SELECT * FROM lease.session_acquire(1, 'b', 'o')",
	} {
		var pe *pgconn.PgError
		if _, err := denied.Exec(ctx, sql); !errors.As(err, &pe) || pe.Code != "42501" {
			problems = append(problems, fmt.Sprintf("another role's %s: %v; want 42501", sql, err))
		}
	}

	// what pg_dump carries of them: a restore into a new database
	file := filepath.Join(srv.Dir, db+".dump")
	if err := srv.DumpAs(ctx, srv.User, db, file); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restore(ctx, db+"_restored", file); err != nil {
		t.Fatal(err)
	}
	restored := privileges(t, srv.DSN(db+"_restored"))
	for fn, acl := range after {
		if got := restored[fn]; got != acl {
			problems = append(problems, fmt.Sprintf("%s: %s after the update, %s restored from its dump", fn, acl, got))
		}
	}
	slices.Sort(problems)
	return problems
}

// privileges is each function of schema lease by name with who, other
// than its owner, may execute it.
func privileges(t *testing.T, dsn string) map[string]string {
	t.Helper()
	conn := connect(t, dsn)
	rows, err := conn.Query(context.Background(), `
SELECT p.proname, coalesce((SELECT string_agg(g, ',' ORDER BY g) FROM (
         SELECT CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END
                || CASE WHEN a.is_grantable THEN '*' ELSE '' END AS g
           FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
          WHERE a.grantee <> p.proowner AND a.privilege_type = 'EXECUTE') AS e), 'nobody')
  FROM pg_proc p
 WHERE p.pronamespace = 'lease'::regnamespace`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var name, acl string
	if _, err := pgx.ForEachRow(rows, []any{&name, &acl}, func() error {
		got[name] = acl
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}
