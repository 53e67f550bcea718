package runner

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/suite"
)

func untar(t *testing.T, b []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		c, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = string(c)
	}
}

// TestPasses checks the plan of the suites for 0.1.0 to 0.5.1: which
// tests each pass has, how it creates the extension (in the test and in
// its expected output alike) and which expected file it uses.
func TestPasses(t *testing.T) {
	passes, err := Passes(model.PgLease, pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range passes {
		names = append(names, p.Name)
	}
	if want := []string{"", "0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0", "0.1.0-0.5.1", "0.2.0-0.5.1", "0.3.0-0.5.1", "0.4.0-0.5.1", "0.5.0-0.5.1"}; !slices.Equal(names, want) {
		t.Fatalf("passes %q; want %q", names, want)
	}
	for _, c := range []struct {
		pass          int
		create        string
		fencing       bool   // has the 0.2.0-only tests
		privilegesVer string // the extension version privileges.out shows
	}{
		{0, "CREATE EXTENSION pg_lease;", true, "0.5.1"},
		{1, "CREATE EXTENSION pg_lease VERSION '0.1.0';", false, "0.1.0"},
		{2, "CREATE EXTENSION pg_lease VERSION '0.2.0';", true, "0.2.0"},
		{3, "CREATE EXTENSION pg_lease VERSION '0.3.0';", true, "0.3.0"},
		{4, "CREATE EXTENSION pg_lease VERSION '0.4.0';", true, "0.4.0"},
		{5, "CREATE EXTENSION pg_lease VERSION '0.5.0';", true, "0.5.0"},
		{6, "CREATE EXTENSION pg_lease VERSION '0.1.0'; ALTER EXTENSION pg_lease UPDATE;", true, "0.5.1"},
		{7, "CREATE EXTENSION pg_lease VERSION '0.2.0'; ALTER EXTENSION pg_lease UPDATE;", true, "0.5.1"},
		{8, "CREATE EXTENSION pg_lease VERSION '0.3.0'; ALTER EXTENSION pg_lease UPDATE;", true, "0.5.1"},
		{9, "CREATE EXTENSION pg_lease VERSION '0.4.0'; ALTER EXTENSION pg_lease UPDATE;", true, "0.5.1"},
		{10, "CREATE EXTENSION pg_lease VERSION '0.5.0'; ALTER EXTENSION pg_lease UPDATE;", true, "0.5.1"},
	} {
		p := passes[c.pass]
		files := untar(t, p.Suites)
		if got := slices.Contains(p.Tests[suite.Regress], "fencing") && slices.Contains(p.Tests[suite.Isolation], "guard_takeover"); got != c.fencing {
			t.Errorf("pass %q: has the 0.2.0 tests = %v", p.Name, got)
		}
		if _, ok := files["regress/sql/fencing.sql"]; ok != c.fencing {
			t.Errorf("pass %q: archive has fencing.sql = %v", p.Name, ok)
		}
		for _, f := range []string{"regress/sql/api.sql", "regress/expected/api.out", "isolation/specs/rollback.spec"} {
			if !strings.Contains(files[f], c.create) {
				t.Errorf("pass %q: %s does not create the extension with %q", p.Name, f, c.create)
			}
		}
		if !strings.Contains(files["regress/expected/privileges.out"], " pg_lease | "+c.privilegesVer+" ") {
			t.Errorf("pass %q: privileges.out is not the one of %s", p.Name, c.privilegesVer)
		}
		for name := range files {
			if strings.Contains(name, "expected/0.1.0") || strings.Contains(name, "expected/0.2.0") || strings.Contains(name, "expected/0.3.0") {
				t.Errorf("pass %q: the archive carries %s", p.Name, name)
			}
		}
	}
}
