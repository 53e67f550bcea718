package render_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// TestGolden compares every rendered file, whole, with its golden copy in
// testdata/golden. Run with -update after an intended change and review
// the diff.
func TestGolden(t *testing.T) {
	files, err := render.Extension(model.PgLease, pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "golden")
	if *testenv.Update {
		if err := render.Write(dir, files); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range files.Names() {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%v (run go test ./internal/render -update to create it)", err)
		}
		if string(want) != string(files[name]) {
			t.Errorf("%s differs from testdata/golden/%s; if the change is intended, run go test ./internal/render -update and review the diff", name, name)
		}
	}
	if stale, err := render.Diff(dir, files); err != nil || len(stale) > 0 {
		t.Errorf("Diff reports %v, %v for the golden directory", stale, err)
	}
}

// TestDeterministic renders twice and expects identical bytes.
func TestDeterministic(t *testing.T) {
	a, err := render.Extension(model.PgLease, pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := render.Extension(model.PgLease, pglease.Files)
	for _, n := range a.Names() {
		if string(a[n]) != string(b[n]) {
			t.Errorf("%s renders differently on a second run", n)
		}
	}
}

func TestQuoteLiteral(t *testing.T) {
	got, err := render.QuoteLiteral("it's")
	if err != nil || got != "'it''s'" {
		t.Errorf("QuoteLiteral(it's) = %q, %v", got, err)
	}
	if _, err := render.QuoteLiteral(`a\b`); err == nil {
		t.Error("QuoteLiteral accepted a backslash")
	}
}

func TestDiffFindsStaleAndMissing(t *testing.T) {
	dir := t.TempDir()
	files := render.Files{"a": []byte("1"), "b": []byte("2")}
	if err := render.Write(dir, render.Files{"a": []byte("changed")}); err != nil {
		t.Fatal(err)
	}
	stale, err := render.Diff(dir, files)
	if err != nil || fmt.Sprint(stale) != "[{a false} {b true}]" {
		t.Errorf("Diff = %v, %v; want a differing, b missing", stale, err)
	}
}

// TestDebianDateIsTheReleaseTime: a changelog entry of a day stands at
// that day's midnight UTC in the Debian changelog, the time Change.Time
// gives the build's SOURCE_DATE_EPOCH, the Release's Date: and BUILDTIME
// (it stood at noon, hours after them); one with a time, at that time.
func TestDebianDateIsTheReleaseTime(t *testing.T) {
	for _, date := range []string{"2026-11-29", "2026-11-29 20:00"} {
		got, err := render.DebianDate(date)
		if err != nil {
			t.Fatal(err)
		}
		want := model.Change{Date: date}.Time().Format("Mon, 02 Jan 2006 15:04:05 -0700")
		if got != want {
			t.Errorf("%s: the Debian changelog says %s; the release time is %s", date, got, want)
		}
	}
}
