package config

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pglease/pglease-gen/internal/model"
)

func TestExampleParsesAndApplies(t *testing.T) {
	s, err := Parse("example", []byte(Example))
	if err != nil {
		t.Fatal(err)
	}
	a, err := Apply(s, model.PgLease, model.Packages, model.CNPG)
	if err != nil {
		t.Fatal(err)
	}
	if a.Suffix != "ACME" || a.Pkg.Maintainer != "ACME packaging <packages@acme.example>" ||
		a.RepoURL != "https://packages.acme.example/pg_lease" || a.Images.Repository != "registry.acme.example/pg_lease" {
		t.Errorf("applied %+v", a)
	}
	if a.Pkg.Release != model.Packages.Release || len(a.Pkg.Changelog) != len(model.Packages.Changelog) {
		t.Errorf("the example changed the release: %d, %d entries", a.Pkg.Release, len(a.Pkg.Changelog))
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"vendor: ACME\nvendr: X\n", `line 2: unknown key "vendr": the keys are release, release_date`},
		{"vendor: ACME\nvendor: X\n", "line 2: vendor is given twice"},
		{"maintainer:\n  - a\n", "line 2: maintainer needs one value"},
		{"homepage:\n", "line 1: homepage needs one value"},
		{"release: two\n", `example:1: release "two": a whole number from 1 to 999`},
		{"release: 0\n", `example:1: release "0": a whole number from 1 to 999`},
		{"release: 2.5\n", `example:1: release "2.5": a whole number`},
		{"release: 1e3\n", `example:1: release "1e3": a whole number`},
		{"release: 0x10\n", `example:1: release "0x10": a whole number`},
		{"vendor: \"\"\n", "example:1: vendor is empty: leave the key out for its default"},
		{"vendor: ACME\n---\nvendor: BETA\n", "example:2: a second YAML document (after ---)"},
		{"- vendor: ACME\n", "line 1: expected keys and values (key: value), not a list"},
		{"vendor: [\n", "example:1: did not find expected node content"},
		{"vendor: ACME\nmaintainer: @acme\n", "example:2: found character that cannot start any token (a value that starts with @"},
		{"vendor: ACME\n\tmaintainer: x\n", "example:2: found a tab character that violates indentation (indent with spaces)"},
	} {
		_, err := Parse("example", []byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want %q", tc.file, err, tc.want)
		}
	}
	if s, err := Parse("empty", nil); err != nil || fmt.Sprint(s) != fmt.Sprint(Settings{From: map[string]string{}}) {
		t.Errorf("an empty file: %+v, %v", s, err)
	}
	// a quoted release is the same number; an error names where the value is
	if s, err := Parse("example", []byte("release: \"2\"\n")); err != nil || s.Release != 2 {
		t.Errorf("release: \"2\": %+v, %v", s, err)
	}
	s, err := Parse("acme.yaml", []byte("vendor: ACME\nmaintainer: nobody\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(s, model.PgLease, model.Packages, model.CNPG); err == nil || !strings.HasPrefix(err.Error(), `acme.yaml:2: maintainer "nobody"`) {
		t.Errorf("an Apply error does not name the file and line: %v", err)
	}
	s = s.Over(Settings{Maintainer: "x", From: map[string]string{"maintainer": "--maintainer"}})
	if _, err := Apply(s, model.PgLease, model.Packages, model.CNPG); err == nil || !strings.HasPrefix(err.Error(), `--maintainer: maintainer "x"`) {
		t.Errorf("an Apply error does not name the flag: %v", err)
	}
}

func TestApplyChecksEveryValue(t *testing.T) {
	newest := model.Packages.Changelog[0]
	for _, tc := range []struct {
		s    Settings
		want string
	}{
		{Settings{Vendor: "AC-ME"}, `vendor "AC-ME": a letter then up to 15 letters or digits`},
		{Settings{Vendor: "1ACME"}, `vendor "1ACME"`},
		{Settings{Maintainer: "ACME"}, `maintainer "ACME": a name and an address`},
		{Settings{Maintainer: "ACME <acme>"}, `maintainer "ACME <acme>"`},
		{Settings{Homepage: "github.com/acme"}, `homepage "github.com/acme": an http or https URL`},
		{Settings{SourceURL: "ftp://acme.example/x"}, `source_url "ftp://acme.example/x"`},
		{Settings{ImageRepository: "Registry.example/pg_lease"}, `image_repository "Registry.example/pg_lease": a registry and a path in lowercase`},
		{Settings{ImageRepository: "registry.example/pg_lease:1"}, `image_repository`},
		{Settings{Release: 2}, "release 2 needs release_date"},
		{Settings{Release: 2, ReleaseDate: newest.Date, ReleaseNote: "x"}, "it must be after the newest changelog entry"},
		{Settings{Release: 2, ReleaseDate: "2099-13-01", ReleaseNote: "x"}, `release_date "2099-13-01": YYYY-MM-DD`},
		{Settings{Release: 2, ReleaseDate: "2026-12-05", ReleaseNote: "two\nlines"}, "release_note: one line"},
		{Settings{Release: 1000}, "release 1000: a whole number from 1 to 999"},
		{Settings{Release: -1}, "release -1"},
		{Settings{ReleaseNote: "x"}, "release_date and release_note go with release"},
		{Settings{Release: newest.Release, ReleaseNote: "x"}, "is the packaged release"},
	} {
		_, err := Apply(tc.s, model.PgLease, model.Packages, model.CNPG)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want %q", tc.s, err, tc.want)
		}
	}
}

func TestRelease(t *testing.T) {
	before := len(model.Packages.Changelog)
	a, err := Apply(Settings{Release: 2, ReleaseDate: "2026-12-05", ReleaseNote: "Rebuilt for ACME", Vendor: "pgdg"}, model.PgLease, model.Packages, model.CNPG)
	if err != nil {
		t.Fatal(err)
	}
	c := a.Pkg.Changelog[0]
	if a.Pkg.Release != 2 || c.Release != 2 || c.Version != model.PgLease.Version() || c.Items[0] != "Rebuilt for ACME" || a.Suffix != "PGDG" {
		t.Errorf("release applied as %d, newest entry %+v, suffix %s", a.Pkg.Release, c, a.Suffix)
	}
	if len(model.Packages.Changelog) != before || model.Packages.Release != 1 {
		t.Error("Apply changed the model")
	}
	if !a.Pkg.Released().Equal(c.Time()) {
		t.Error("the newest entry is not the release date")
	}
}

func TestOver(t *testing.T) {
	file := Settings{Vendor: "ACME", Maintainer: "A <a@a.example>", Release: 2}
	got := file.Over(Settings{Vendor: "BETA"})
	if got.Vendor != "BETA" || got.Maintainer != "A <a@a.example>" || got.Release != 2 {
		t.Errorf("%+v", got)
	}
}

// TestReadmeShowsTheExample: the README's file is Example, byte for byte.
func TestReadmeShowsTheExample(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "```yaml\n"+Example+"```\n") {
		t.Error("README.md does not show config.Example as it is: copy it from internal/config/config.go")
	}
}

// TestReleaseDateNotAhead: a release date after the clock is refused (apt
// refuses a suite dated ahead of the host's clock); the same date is taken
// once the clock has passed it.
func TestReleaseDateNotAhead(t *testing.T) {
	s := Settings{Release: 2, ReleaseDate: "2026-12-06", ReleaseNote: "x", Now: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)}
	_, err := Apply(s, model.PgLease, model.Packages, model.CNPG)
	if err == nil || !strings.Contains(err.Error(), "release_date 2026-12-06: it is after now (2026-12-05 12:00 UTC)") {
		t.Errorf("a release date one day ahead: %v", err)
	}
	s.Now = s.Now.Add(24 * time.Hour)
	if _, err := Apply(s, model.PgLease, model.Packages, model.CNPG); err != nil {
		t.Errorf("the same date once it has come: %v", err)
	}
}

// TestHostileValuesRefused: characters a spec, debian/control or
// debian/rules would read as code are refused in the settings that land
// there as fields, naming the setting.
func TestHostileValuesRefused(t *testing.T) {
	for _, tc := range []struct {
		s    Settings
		want string
	}{
		{Settings{Maintainer: "%(id) <a@b.example>"}, `maintainer "%(id) <a@b.example>": holds "%"`},
		{Settings{Maintainer: "A ${Newline}Depends: x <a@b.example>"}, `holds "$"`},
		{Settings{Maintainer: "Doe, Jane <a@b.example>"}, `holds ","`},
		{Settings{Maintainer: "A `id` <a@b.example>"}, "holds \"`\""},
		{Settings{Homepage: "https://acme.example/%{dist}"}, `homepage "https://acme.example/%{dist}": holds "%"`},
		{Settings{SourceURL: "https://acme.example/$(shell id)"}, `source_url "https://acme.example/$(shell id)": holds "$"`},
		{Settings{Release: 2, ReleaseDate: "2026-12-05", ReleaseNote: "tab\there"}, "release_note: one line"},
	} {
		if _, err := Apply(tc.s, model.PgLease, model.Packages, model.CNPG); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want %q", tc.s, err, tc.want)
		}
	}
}

// TestOlderEntriesStayUpstreams: a packager's vendor and maintainer name
// the entry of the release they build, never the project's older ones.
func TestOlderEntriesStayUpstreams(t *testing.T) {
	for _, s := range []Settings{
		{Vendor: "ACME", Maintainer: "ACME packaging <p@acme.example>"},
		{Vendor: "ACME", Maintainer: "ACME packaging <p@acme.example>", Release: 2, ReleaseDate: "2026-12-05", ReleaseNote: "Rebuilt"},
	} {
		a, err := Apply(s, model.PgLease, model.Packages, model.CNPG)
		if err != nil {
			t.Fatal(err)
		}
		top := a.Pkg.Changelog[0]
		if top.By != s.Maintainer || top.Suffix != "ACME" || top.Release != max(s.Release, 1) {
			t.Errorf("%+v: the built release's entry is %+v", s, top)
		}
		for _, c := range a.Pkg.Changelog[1:] {
			if c.By != model.Packages.Maintainer || c.Suffix != model.Packages.Suffixes[0] {
				t.Errorf("%+v: the older entry %s-%d is %q %q, not the project's", s, c.Version, c.Release, c.By, c.Suffix)
			}
		}
	}
}
