// Package testenv divides the tests into two tiers. `go test -short ./...`
// is the unit tier: no root, Docker, PostgreSQL, rpm, dpkg or apt tools, and every
// test that needs one of them skips, saying what it needs. The full run
// (`make test`, which installs everything first) runs them all, and there a
// missing tool fails the test rather than skipping it.
package testenv

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/pglease/pglease-gen/internal/model"
)

// Needs skips t under -short, saying what it needs.
func Needs(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s: skipped under -short (make test runs it)", what)
	}
}

// Tools skips t under -short and fails it when one of the programs is not
// on PATH.
func Tools(t testing.TB, tools ...string) {
	t.Helper()
	Needs(t, strings.Join(tools, ", "))
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("needs %s (make deps installs it): %v", tool, err)
		}
	}
}

// Server skips t under -short: it starts PostgreSQL servers from the
// local installation (pg_config).
func Server(t testing.TB) { t.Helper(); Needs(t, "a PostgreSQL installation (pg_config)") }

// Docker skips t under -short: it runs containers.
func Docker(t testing.TB) { t.Helper(); Needs(t, "a Docker daemon and the local images") }

// FencingOnly puts a database with pg_lease 0.5.0 or later in the mode of
// 0.4.0 and of a database updated from it: no maximum TTL, so no grace
// after a fault, and renewals as durable as grants (a no-op before 0.5.0).
// The tests of epochs across faults run in it, so that the grants they
// count are not refused by the grace; the grace has tests of its own.
var FencingOnly = "DO $$ BEGIN IF to_regproc('" + model.PgLease.Schema + ".set_max_ttl') IS NOT NULL THEN " +
	"PERFORM " + model.PgLease.Schema + ".set_max_ttl(NULL); END IF; END $$"

// OnlyTests removes from m, a copy of the suites, every regress test and
// isolation spec but the ones named ("regress/api", "isolation/rollback"):
// a test about how the runner reports a case, not about the extension,
// runs the few cases it looks at instead of all of them in every pass.
// Naming one that m lacks fails t.
func OnlyTests(t testing.TB, m fstest.MapFS, keep ...string) {
	t.Helper()
	kept := map[string]bool{}
	for p := range m {
		for _, dir := range []string{"regress/sql/", "isolation/specs/"} {
			rest, ok := strings.CutPrefix(p, dir)
			if !ok || strings.Contains(rest, "/") {
				continue
			}
			name := strings.SplitN(dir, "/", 2)[0] + "/" + strings.TrimSuffix(strings.TrimSuffix(rest, ".sql"), ".spec")
			if slices.Contains(keep, name) {
				kept[name] = true
			} else {
				delete(m, p)
			}
		}
	}
	for _, k := range keep {
		if !kept[k] {
			t.Fatalf("OnlyTests: the suites have no test %s", k)
		}
	}
}
