package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/suite"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// copyFS copies src into a MapFS that a test can change.
func copyFS(t *testing.T, src fs.FS) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(src, p)
		m[p] = &fstest.MapFile{Data: b, Mode: 0o644}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRunLocalReportsBrokenExpected changes one expected line and expects
// the run to fail, name the test, and show the line in the diffs.
func TestRunLocalReportsBrokenExpected(t *testing.T) {
	testenv.Server(t)
	src := copyFS(t, pglease.Files)
	// api and one spec in every pass: the failures the report must show,
	// without the suites' other 190 cases (a minute and a half of CPU)
	testenv.OnlyTests(t, src, "regress/api", "isolation/rollback")
	f := src["regress/expected/api.out"]
	broken := bytes.Replace(f.Data, []byte(" not_owner\n"), []byte(" deliberately_wrong\n"), 1)
	if bytes.Equal(broken, f.Data) {
		t.Fatal("regress/expected/api.out has no line to break")
	}
	f.Data = broken
	var out bytes.Buffer
	res, err := RunLocal(context.Background(), model.PgLease, LocalOptions{Src: src, Results: t.TempDir()}, &out)
	if !errors.Is(err, ErrFailed) {
		t.Fatalf("RunLocal = %v; want ErrFailed\n%s", err, out.String())
	}
	var failed []string
	for _, c := range res.Cases {
		if !c.Passed {
			failed = append(failed, string(c.Kind)+"/"+c.Name)
		}
	}
	// every pass of the newest version runs api against the one expected
	// file, and so do 0.1.0, 0.2.0, 0.4.0 and 0.5.0, whose output is the same (0.3.0
	// has an expected file of its own)
	if want := "[regress/api regress/api@0.1.0 regress/api@0.2.0 regress/api@0.4.0 regress/api@0.5.0 regress/api@0.1.0-0.5.1 regress/api@0.2.0-0.5.1 regress/api@0.3.0-0.5.1 regress/api@0.4.0-0.5.1 regress/api@0.5.0-0.5.1]"; fmt.Sprint(failed) != want {
		t.Errorf("failed tests = %v; want %s\nupdate diffs:\n%s", failed, want, res.Diffs[suite.Update])
	}
	if !strings.Contains(res.Diffs[suite.Regress], "- deliberately_wrong") {
		t.Errorf("regress diffs do not show the broken line:\n%s", res.Diffs[suite.Regress])
	}
	if !strings.Contains(out.String(), "deliberately_wrong") {
		t.Errorf("the report does not show the diff:\n%s", out.String())
	}
}

// TestRunLocalKeepsOtherResults runs the suites into a results directory
// that holds other results (a matrix run's pgN/): they stay, and the run's
// own land in regress/ and isolation/.
func TestRunLocalKeepsOtherResults(t *testing.T) {
	testenv.Server(t)
	results := t.TempDir()
	other := filepath.Join(results, "pg17", "keep.txt")
	os.MkdirAll(filepath.Dir(other), 0o755)
	os.WriteFile(other, []byte("mine"), 0o644)
	var out bytes.Buffer
	if _, err := RunLocal(context.Background(), model.PgLease, LocalOptions{Src: pglease.Files, Results: results, NewestOnly: true}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if b, _ := os.ReadFile(other); string(b) != "mine" {
		t.Error("the run removed another run's results")
	}
	for _, f := range []string{"regress/results/api.out", "isolation/results/waiter.out"} {
		if _, err := os.Stat(filepath.Join(results, f)); err != nil {
			t.Errorf("no %s: %v", f, err)
		}
	}
}

// TestRunLocalRefusesTheSourceTree refuses a results directory that holds
// the suites (the run replaces its regress/ and isolation/), and none.
func TestRunLocalRefusesTheSourceTree(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "regress", "sql"), 0o755)
	os.WriteFile(filepath.Join(src, "regress", "sql", "api.sql"), []byte("mine"), 0o644)
	var out bytes.Buffer
	_, err := RunLocal(context.Background(), model.PgLease, LocalOptions{Src: pglease.Files, Results: src}, &out)
	if err == nil || !strings.Contains(err.Error(), "holds the test suites") {
		t.Errorf("err = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "regress", "sql", "api.sql")); string(b) != "mine" {
		t.Error("the refused run touched the suites")
	}
	if _, err := RunLocal(context.Background(), model.PgLease, LocalOptions{Src: pglease.Files}, &out); err == nil || !strings.Contains(err.Error(), "no results directory") {
		t.Errorf("no results directory: err = %v", err)
	}
}

// TestInstallerCheckFailsTheRun runs the suites on this machine with an
// installer whose check (what an uninstall proof does afterwards) fails:
// the suites pass, and Run reports the check's failure.
func TestInstallerCheckFailsTheRun(t *testing.T) {
	testenv.Server(t)
	ctx := context.Background()
	inst, err := pgserver.FindInstall(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	host, err := NewHost(inst)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	passes, err := Passes(model.PgLease, pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	copyFiles := CopyFiles(model.PgLease, pglease.Files)
	install := func(ctx context.Context, t Target, stage func(string)) (func(context.Context) error, error) {
		if _, err := copyFiles(ctx, t, stage); err != nil {
			return nil, err
		}
		return func(context.Context) error { return errors.New("removal left files behind: /x") }, nil
	}
	out, err := Run(ctx, host, Options{Passes: passes[:1], Install: install})
	if !out.Result.Passed() {
		t.Fatalf("the suites failed: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "removal left files behind: /x") {
		t.Errorf("Run = %v; want the check's failure", err)
	}
}
