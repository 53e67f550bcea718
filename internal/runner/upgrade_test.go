package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/suite"
	"github.com/pglease/pglease-gen/internal/testenv"
)

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
	script := ext.UpdateScript(from, ext.Version())
	// cut takes out the statement that starts with start
	cut := func(start string) func(string) (string, error) {
		return func(s string) (string, error) {
			i := strings.Index(s, start)
			if i < 0 {
				return "", fmt.Errorf("%s has no %q", script, start)
			}
			j := strings.Index(s[i:], ";\n")
			return s[:i] + s[i+j+2:], nil
		}
	}
	variants := []struct {
		name string
		edit func(string) (string, error)
		want []string // in the difference, in order
	}{
		{"unchanged", func(s string) (string, error) { return s, nil }, nil},
		// (the held leases: an update that moves epochs back, or frees a
		// holder's name, is caught by the rows before and after)
		{"resets_epochs", func(s string) (string, error) {
			return s + "UPDATE @extschema@.leases SET epoch = 1;\n", nil
		}, []string{"the lease rows changed in the update", "before", "after"}},
		{"frees_a_name", func(s string) (string, error) {
			return s + "UPDATE @extschema@.leases SET owner = NULL, expires_at = NULL WHERE name = (SELECT min(name) FROM @extschema@.leases WHERE owner IS NOT NULL);\n", nil
		}, []string{"the lease rows changed in the update"}},
		// (objects of the newest update, 0.5.0 to 0.5.1)
		{"forgets_revoke", cut("REVOKE ALL ON FUNCTION @extschema@.limit_sync() FROM PUBLIC"),
			[]string{"function lease.limit_sync() differs", "- fresh:   acl {"}},
		{"extra_grant", func(s string) (string, error) {
			return s + "GRANT SELECT ON TABLE @extschema@.eras TO PUBLIC;\n", nil
		}, []string{"relation lease.eras differs", "=r/"}},
		{"forgets_comment", cut("COMMENT ON FUNCTION @extschema@.limit_ttl() IS"),
			[]string{"function lease.limit_ttl() differs", "+ updated: comment none"}},
		{"forgets_trigger_comment", cut("COMMENT ON FUNCTION @extschema@.limits_changed() IS"),
			[]string{"function lease.limits_changed() differs", "+ updated: comment none"}},
		{"forgets_search_path", func(s string) (string, error) {
			i := strings.Index(s, "CREATE OR REPLACE FUNCTION @extschema@.open_session(")
			j := strings.Index(s[i:], "SET search_path = pg_catalog, pg_temp\n")
			if i < 0 || j < 0 {
				return "", fmt.Errorf("%s: no open_session function with a search path", script)
			}
			return s[:i+j] + s[i+j+len("SET search_path = pg_catalog, pg_temp\n"):], nil
		}, []string{"function lease.open_session(text,interval) differs", `- fresh:   config {"search_path=pg_catalog, pg_temp"}`}},
	}
	inst, err := pgserver.FindInstall(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var updates []Update
	for _, v := range variants {
		name := "pg_lease_update_" + v.name
		remove, err := pgserver.InstallCopy(ext, pglease.Files, inst, name, script, v.edit)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(remove)
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
	if len(out.Result.Cases) != len(variants) {
		t.Fatalf("%d cases for %d variants", len(out.Result.Cases), len(variants))
	}
	for i, v := range variants {
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
