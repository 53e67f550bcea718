package safety

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/pgtest"
	"github.com/pglease/pglease-gen/internal/render"
)

// The broken variants of this package's tests, by the promise each one
// breaks. A bug that a promise's tests should catch and do not: add a
// variant here, under its promise, naming the test that must go red on
// it; that test installs it with installVariant and must fail on it
// (TestCatalogue checks the names, the tests and that the edits still
// find their text; make test runs the tests).
//
// Other catalogues: the history checker's rules, internal/stress
// (variants_test.go); the grace across real faults, internal/faults
// (scenarios_test.go's Variants); the update check, internal/runner
// (upgrade_test.go); the Go client, internal/clienttest/mutants.
type brokenVariant struct {
	name string // the copy's extension name
	test string // the test that must catch it
	bug  string
	file string // the script edited: "" for the install script
	// edits put the bug in (pgtest.Edit: each finds its text exactly
	// where it says, or the test fails as "the script changed")
	edits []pgtest.Edit
}

// thisDatabase is how the install script names its own database's OID.
var thisDatabase = func() string {
	s, err := render.Block(pglease.Files, "templates/pg_lease.sql.tmpl", "this_database", nil)
	if err != nil {
		panic(err)
	}
	return s
}()

// the floor's inline branch: a change at a lower synchronous_commit than
// the floor is flushed before its call returns
const floorInline = "IN ('offon', 'localon', 'remote_writeon', 'offonon', 'localonon', 'remote_writeonon') THEN"

var catalogue = []brokenVariant{
	// Epochs across eras: a server that may have lost history (a crash, a
	// promotion, a restore, a clone) grants above anything it gave before.
	{name: "pg_lease_restore_sysid", test: "TestRestoreAfterTheSourceMovedOn",
		bug: "a restored dump's rows are taken as the server's own when the system identifier matches",
		edits: []pgtest.Edit{{Old: "bool_and(r.system_identifier = v_sysid AND r.database_oid = v_db AND r.home = v_home) AS ours",
			New: "bool_and(r.system_identifier = v_sysid) AS ours"}}},
	{name: "pg_lease_promoted_fresh", test: "TestPromotedBeforeTheFirstGrant",
		bug:   "the installed era is continued on a new timeline",
		edits: []pgtest.Edit{{Old: " AND v_top.installed AND v_top.timeline = v_tli THEN", New: " AND v_top.installed THEN"}}},
	{name: "pg_lease_era_now_logged", test: "TestCrashEndsTheRunsEra",
		bug:   "era_now is a logged table: a crash keeps the era it names",
		edits: []pgtest.Edit{{Old: "CREATE UNLOGGED TABLE @extschema@.era_now (", New: "CREATE TABLE @extschema@.era_now ("}}},
	{name: "pg_lease_entry_unflushed", test: "TestEraEntryOutlivesTheNextCrash",
		bug: "an era's entry is not flushed before the first grant in it",
		edits: []pgtest.Edit{{Old: "PERFORM set_config('synchronous_commit', 'on', true);\n    END IF;\n    PERFORM pg_notify('lease_era'",
			New: "NULL;\n    END IF;\n    PERFORM pg_notify('lease_era'"}}},
	{name: "pg_lease_clone_blind", test: "TestTemplateCloneEntersNewEra",
		bug: "the era rows are not told apart by database: a template's clone continues its era",
		edits: []pgtest.Edit{
			// era_first, era_last, era_grace
			{Old: "\n               AND c.database_oid OPERATOR(pg_catalog.=) " + thisDatabase + " LIMIT 1);", New: " LIMIT 1);", Times: 3},
			// acquire's joined statements (with and without the read of sessions), grace()
			{Old: " AND c.database_oid = " + thisDatabase + "\n", New: "\n", Times: 7},
			// acquire's reads of the grace
			{Old: " AND c.database_oid = " + thisDatabase + " LIMIT 1);", New: " LIMIT 1);", Times: 4},
			// enter_era
			{Old: " AND v_now.database_oid = v_db", New: "", Times: 3}}},
	{name: "pg_lease_stale_plans", test: "TestPlansFollowTheEra",
		bug: "no trigger on era_now: plans keep the era they were made in",
		edits: []pgtest.Edit{{Old: "CREATE TRIGGER era_changed", Through: ";\n"},
			{Old: "ALTER TABLE @extschema@.era_now ENABLE ALWAYS TRIGGER era_changed;\n"}}},

	// The durability floor: a change is flushed before its call returns,
	// whatever the caller's synchronous_commit.
	{name: "pg_lease_floor_not_raised", test: "TestChangesAtOffOutliveACrash",
		bug:   "the floor's inline branch does nothing: changes at off are lost in a crash",
		edits: []pgtest.Edit{{Old: floorInline, New: floorInline + " NULL; ELSIF false THEN", Times: 11}}},

	// The grace: after a fault no name is granted while a holder of the
	// lost history may still believe it holds it.
	{name: "pg_lease_nograce", test: "TestHoldersNeverOverlap",
		bug: "no grace after a fault",
		edits: []pgtest.Edit{{Old: "        v_grace := (((clock_timestamp() AT TIME ZONE 'UTC') + @extschema@.grace_length() * 1.01) AT TIME ZONE 'UTC');",
			New: "        v_grace := NULL;"}}},
	{name: "pg_lease_raisenow", test: "TestHoldersNeverOverlap",
		bug:   "a raise of the maximum takes effect at once, as 0.5.0's did",
		edits: []pgtest.Edit{{Old: "AND set_max_ttl.delay > interval '0'", New: "AND false"}}},

	// No role above its station: the installer (who owns schema lease)
	// runs nothing as the superuser, and restores only into a database
	// that never granted.
	{name: "pg_lease_unguarded", test: "TestInstallerCannotRunCodeAsSuperuser",
		bug:   "no event trigger guarding schema lease",
		edits: []pgtest.Edit{{Old: "CREATE EVENT TRIGGER", Cut: true, Times: 1}}},
	{name: "pg_lease_uncast", test: "TestInstallerOverloadRunsNothing",
		bug:   "a definer function calls enter_era with an argument of another type: an overload the installer makes is chosen",
		edits: []pgtest.Edit{{Old: "enter_era((v_next)::numeric, false)", New: "enter_era(v_next)", Times: 2}}},
	{name: "pg_lease_keepwrites", test: "TestInstallerWritesEndWhenTheDatabaseGrants",
		bug: "the first grant leaves the installer's INSERT on the state tables",
		edits: []pgtest.Edit{{Old: "format('REVOKE INSERT ON TABLE", New: "format('GRANT INSERT ON TABLE"},
			{Old: "@extschema@.sessions FROM %I'", New: "@extschema@.sessions TO %I'"}}},

	// A session's names live with their session.
	{name: "pg_lease_ownexpiry", test: "TestSessionNamesLiveWithTheirSession",
		bug:   "a session's name is judged by its own expiry, not its session's",
		edits: []pgtest.Edit{{Old: plainTake, New: "(l.expires_at <= clock_timestamp())", Times: 4}}},

	// Waits are bounded by the caller's max_wait.
	{name: "pg_lease_unbounded", test: "TestWaitsAreBounded",
		bug: "a blocking acquire bounds only the wait for the row",
		edits: []pgtest.Edit{{Old: "                    PERFORM set_config('lock_timeout', greatest(ceil(v_left * 1000), 1)::bigint::text, true);",
			New: "                    PERFORM set_config('lock_timeout', v_lock_timeout, true);", Times: 4}}},
	{name: "pg_lease_era_locks", test: "TestWaitsAreBounded",
		bug:   "the era check locks eras before it looks, until the caller's transaction ends",
		edits: []pgtest.Edit{{Old: "        RETURN v_now.band;\n    END IF;\n    LOCK TABLE", New: "        NULL;\n    END IF;\n    LOCK TABLE"}}},

	// The update from the previous release keeps what the operator gave.
	{name: "pg_lease_nocarry", test: "TestUpdateKeepsTheOperatorsGrants", file: updateScript,
		bug:   "the update carries no privileges to the functions it makes again",
		edits: []pgtest.Edit{{Old: carryCondition, New: "    IF false THEN", Times: 5}}},
	{name: "pg_lease_initprivs", test: "TestUpdateKeepsTheOperatorsGrants", file: updateScript,
		bug: "the carried privileges are recorded as the extension's initial ones: a dump leaves them out",
		edits: []pgtest.Edit{{Old: "IF v_script IS NULL THEN\n            DELETE", New: "IF false THEN\n            DELETE", Times: 5},
			{Old: "ELSE\n            UPDATE pg_catalog.pg_init_privs", New: "ELSIF false THEN\n            UPDATE pg_catalog.pg_init_privs", Times: 5}}},
}

// updateScript is the update TestUpdateKeepsTheOperatorsGrants runs.
var updateScript = model.PgLease.UpdateScript("0.5.0", model.PgLease.Version())

// carryCondition: the update carries a function's privileges only where
// someone changed them
const carryCondition = "    IF (v_acl IS NULL AND v_script IS NULL OR v_acl OPERATOR(pg_catalog.=) v_script) IS NOT TRUE THEN"

func catalogued(t testing.TB, name string) brokenVariant {
	t.Helper()
	for _, v := range catalogue {
		if v.name == name {
			return v
		}
	}
	t.Fatalf("no broken variant %s in the catalogue (variants_test.go)", name)
	return brokenVariant{}
}

// installVariant installs the catalogue's variant name into inst for the
// rest of the test.
func installVariant(t testing.TB, inst pgserver.Install, name string) {
	t.Helper()
	v := catalogued(t, name)
	file := v.file
	if file == "" {
		file = model.PgLease.ScriptFile()
	}
	pgtest.Variant(t, inst, v.name, file, v.edits...)
}

// TestCatalogue: every variant's name is its own, its test exists, the
// package's tests use it, and its edits still find their text in today's
// scripts.
func TestCatalogue(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]bool{}
	var uses strings.Builder // the tests' sources, the catalogue's left out
	fset := token.NewFileSet()
	for _, f := range files {
		src, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range src.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && strings.HasPrefix(fn.Name.Name, "Test") {
				tests[fn.Name.Name] = true
			}
		}
		if f != "variants_test.go" {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			uses.Write(b)
		}
	}
	seen := map[string]bool{}
	for _, v := range catalogue {
		if seen[v.name] {
			t.Errorf("%s: two variants of this name", v.name)
		}
		seen[v.name] = true
		if !tests[v.test] {
			t.Errorf("%s: no test %s in this package", v.name, v.test)
		}
		if !strings.Contains(uses.String(), `"`+v.name+`"`) {
			t.Errorf("%s: no test of this package uses it", v.name)
		}
		file := v.file
		if file == "" {
			file = model.PgLease.ScriptFile()
		}
		if err := pgtest.Check(file, v.edits...); err != nil {
			t.Errorf("%s: %v", v.name, err)
		}
	}
}
