package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pglease/pglease-gen/internal/model"
)

var clNow = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// TestChangelogRefuses: every entry that would make a changelog lie is
// refused with its file and line.
func TestChangelogRefuses(t *testing.T) {
	v := model.PgLease.Version()
	for _, tc := range []struct{ file, want string }{
		{"- version: " + v + "\n  release: 3\n  date: 2026-12-06\n  items: [x]\n", "log:1: release 3 of " + v + " follows release 1: release 2 is missing"},
		{"- version: " + v + "\n  release: 2\n  date: 2026-12-06\n  items: [x]\n- version: " + v + "\n  release: 2\n  date: 2026-12-05\n  items: [y]\n", "log:5: release 2 of " + v + " is also at log:1"},
		{"- version: " + v + "\n  release: 2\n  date: 2026-12-05\n  items: [x]\n- version: " + v + "\n  release: 3\n  date: 2026-12-06\n  items: [y]\n", "log:5: date 2026-12-06: not before the release above it"},
		{"- version: " + v + "\n  release: 1\n  date: 2026-12-06\n  items: [x]\n", "release 1 of " + v + " is the project's own"},
		{"- version: 9.9.9\n  release: 2\n  date: 2026-12-06\n  items: [x]\n", "version 9.9.9: not a version of pg_lease"},
		{"- version: " + v + "\n  release: 2\n  date: 2026-12-08\n  items: [x]\n", "date 2026-12-08: after now"},
		{"- version: " + v + "\n  release: 2\n  date: 2026-12-01\n  items: [x]\n", "not after " + v + "'s release"},
		{"- version: " + v + "\n  release: 2\n  date: 2026-12-06\n", "log:1: the release has no items"},
		{"- version: " + v + "\n  release: 2\n  date: 2026-12-06\n  items: [x]\n  note: y\n", `log:5: unknown key "note"`},
		{"- version: " + v + "\n  release: 2\n  date: @x\n  items: [x]\n", "log:3: found character that cannot start any token"},
		{"version: " + v + "\n", "log:1: expected a list of releases"},
	} {
		_, err := ParseChangelog("log", []byte(tc.file), model.PgLease, model.Packages, clNow)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want %q", tc.file, err, tc.want)
		}
	}
}

// TestChangelogKeepsEveryRelease: release 2, then 3, each added to the
// file by AppendChangelog as build does; a build without --release then
// makes release 3 with 3, 2 and the project's 1 in its changelog, newest
// first; --release 2 again with a note, 1, or 5 is refused.
func TestChangelogKeepsEveryRelease(t *testing.T) {
	file := filepath.Join(t.TempDir(), ChangelogFile)
	v := model.PgLease.Version()
	apply := func(s Settings) (Applied, error) {
		t.Helper()
		log, err := ReadChangelog(file, model.PgLease, model.Packages, clNow)
		if err != nil {
			t.Fatal(err)
		}
		s.Log, s.Now = &log, clNow
		return Apply(s, model.PgLease, model.Packages, model.CNPG)
	}
	for _, r := range []struct {
		n          int
		date, note string
	}{{2, "2026-12-05", "Second"}, {3, "2026-12-06 09:30", "Third"}} {
		a, err := apply(Settings{Release: r.n, ReleaseDate: r.date, ReleaseNote: r.note, Maintainer: "ACME packaging <p@acme.example>", Vendor: "ACME"})
		if err != nil {
			t.Fatal(err)
		}
		if a.New == nil || a.New.Release != r.n || a.Changelog != file {
			t.Fatalf("release %d: the build does not say to record it (%+v)", r.n, a.New)
		}
		if err := AppendChangelog(file, *a.New); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(file)
	if !strings.HasPrefix(string(b), "# ") || strings.Index(string(b), "Third") > strings.Index(string(b), "Second") {
		t.Errorf("the changelog file is not newest first under its header:\n%s", b)
	}
	a, err := apply(Settings{Vendor: "ACME"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Pkg.Release != 3 || a.New != nil {
		t.Errorf("a build without --release makes release %d (new: %v), not the newest recorded, 3", a.Pkg.Release, a.New)
	}
	var got []string
	for _, c := range a.Pkg.Changelog[:3] {
		got = append(got, c.EVR(c.Suffix)+" "+strings.Join(c.Items, " "))
	}
	if want := v + "-3ACME Third|" + v + "-2ACME Second|" + v + "-1"; !strings.HasPrefix(strings.Join(got, "|"), want) {
		t.Errorf("the changelog goes %q; want it to start %q", got, want)
	}
	for _, tc := range []struct {
		s    Settings
		want string
	}{
		{Settings{Release: 3, ReleaseDate: "2026-12-07", ReleaseNote: "again"}, "release 3 is the packaged release (" + file + ":4)"},
		{Settings{Release: 1}, "release 1: " + v + " is already at release 3"},
		{Settings{Release: 5, ReleaseDate: "2026-12-07", ReleaseNote: "five"}, "so the next is 4; a skipped number"},
	} {
		if _, err := apply(tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want %q", tc.s, err, tc.want)
		}
	}
}
