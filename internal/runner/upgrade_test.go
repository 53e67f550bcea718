package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/pgtest"
	"github.com/pglease/pglease-gen/internal/suite"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// updateVariants are the update script's broken variants: each makes one
// of the usual mistakes, and the update check must name it (want: what
// its difference says, in order). A mistake the check should catch: add a
// variant here.
var updateVariants = []struct {
	name  string
	edits []pgtest.Edit
	want  []string // in the difference, in order
}{
	{"unchanged", nil, nil},
	// (the held leases: an update that moves epochs back, or frees a
	// holder's name, is caught by the rows before and after)
	{"resets_epochs", []pgtest.Edit{{New: "UPDATE @extschema@.leases SET epoch = 1;\n"}},
		[]string{"the lease rows changed in the update", "before", "after"}},
	{"frees_a_name", []pgtest.Edit{{New: "UPDATE @extschema@.leases SET owner = NULL, expires_at = NULL WHERE name = (SELECT min(name) FROM @extschema@.leases WHERE owner IS NOT NULL);\n"}},
		[]string{"the lease rows changed in the update"}},
	// (objects of the newest update, 0.5.0 to 0.5.1)
	{"forgets_revoke", cut("REVOKE ALL ON FUNCTION @extschema@.limit_sync() FROM PUBLIC"),
		[]string{"function lease.limit_sync() differs", "- fresh:   acl {"}},
	{"extra_grant", []pgtest.Edit{{New: "GRANT SELECT ON TABLE @extschema@.eras TO PUBLIC;\n"}},
		[]string{"relation lease.eras differs", "=r/"}},
	{"forgets_comment", cut("COMMENT ON FUNCTION @extschema@.limit_ttl() IS"),
		[]string{"function lease.limit_ttl() differs", "+ updated: comment none"}},
	{"forgets_trigger_comment", cut("COMMENT ON FUNCTION @extschema@.limits_changed() IS"),
		[]string{"function lease.limits_changed() differs", "+ updated: comment none"}},
	{"forgets_search_path", []pgtest.Edit{{After: "CREATE OR REPLACE FUNCTION @extschema@.open_session(", Old: "SET search_path = pg_catalog, pg_temp\n"}},
		[]string{"function lease.open_session(text,interval) differs", `- fresh:   config {"search_path=pg_catalog, pg_temp"}`}},
}

// cut takes out the statement that starts with start.
func cut(start string) []pgtest.Edit { return []pgtest.Edit{{Old: start, Through: ";\n"}} }

// TestUpdateVariantsStillApply: each variant's edits still find their text
// in today's update script (the fast tier's check; the update check runs
// them in TestUpdateCheckCatchesMistakes).
func TestUpdateVariantsStillApply(t *testing.T) {
	for _, v := range updateVariants {
		if err := pgtest.Check(newestUpdate(), v.edits...); err != nil {
			t.Errorf("variant %s: %v", v.name, err)
		}
	}
}

// newestUpdate is the update script from the previous release to this one.
func newestUpdate() string {
	ext := model.PgLease
	return ext.UpdateScript(ext.Versions[len(ext.Versions)-2].Number, ext.Version())
}

// TestUpdateCheckCatchesMistakes installs copies of the extension whose
// update script makes one of the usual mistakes, and runs the update
// check on each on one server: every broken copy fails it, with the
// object and the difference named; the unchanged copy passes (so the
// check can pass at all).
func TestUpdateCheckCatchesMistakes(t *testing.T) {
	testenv.Server(t)
	ctx := context.Background()
	ext := model.PgLease
	if len(ext.Versions) < 2 {
		t.Fatal("the model has one version: no update script to check")
	}
	from := ext.Versions[len(ext.Versions)-2].Number
	script := newestUpdate()
	inst, err := pgserver.FindInstall(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var updates []Update
	for _, v := range updateVariants {
		name := "pg_lease_update_" + v.name
		pgtest.Variant(t, inst, name, script, v.edits...)
		updates = append(updates, Update{Name: name, From: from, To: ext.Version()})
	}
	host, err := NewHost(inst)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	out, err := Run(ctx, host, Options{Updates: updates})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Result.Cases) != len(updateVariants) {
		t.Fatalf("%d cases for %d variants", len(out.Result.Cases), len(updateVariants))
	}
	for i, v := range updateVariants {
		c := out.Result.Cases[i]
		diff := out.Result.CaseDiffs[suite.Update][c.Name]
		if v.want == nil {
			if !c.Passed {
				t.Errorf("%s: the unchanged update fails the check:\n%s", v.name, diff)
			}
			continue
		}
		if c.Passed {
			t.Errorf("%s: the check passed a broken update", v.name)
			continue
		}
		rest := diff
		for _, w := range v.want {
			k := strings.Index(rest, w)
			if k < 0 {
				t.Errorf("%s: the difference does not show %q:\n%s", v.name, w, diff)
				break
			}
			rest = rest[k+len(w):]
		}
		t.Logf("%s:\n%s", v.name, diff)
	}
}
