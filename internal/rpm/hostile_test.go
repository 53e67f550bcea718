package rpm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pglease/pglease-gen/internal/config"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// HostileNote is a release note a packager may write that rpm would run
// or expand if the spec carried it as it is: a shell command, a macro, a
// builtin, a dpkg substvar, backquotes and a backslash.
const HostileNote = "uses %(echo hi) and %{dist} %% %{lua:print(1)} ${Newline} `id` \\n"

// TestHostileNoteStaysText builds with HostileNote through both builders
// and rebuilds the pure Go source RPM with a bare `rpmbuild --rebuild` (no
// defines, as a packager's host would): all three RPMs' changelogs carry
// the note as written, and all three name the Packager. Before the spec
// escaped %, the rebuilt changelog said "hi" (the shell ran).
func TestHostileNoteStaysText(t *testing.T) {
	testenv.Tools(t, "rpm", "rpmbuild")
	a, err := config.Apply(config.Settings{Release: 2, ReleaseDate: "2026-12-05", ReleaseNote: HostileNote}, model.PgLease, model.Packages, model.CNPG)
	if err != nil {
		t.Fatal(err)
	}
	opts := func(builder string) Options {
		o := options(builder, a.Pkg.Released(), 18)
		o.Pkg, o.Suffix = a.Pkg, a.Suffix
		return o
	}
	name := "pg_lease_18-" + ver + "-2PGSTY.el9"
	pure, real := build(t, opts(PureGo)), build(t, opts(Rpmbuild))
	top := t.TempDir()
	srpm := filepath.Join(top, name+".src.rpm")
	if err := os.WriteFile(srpm, pure["SRPMS/"+name+".src.rpm"], 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("rpmbuild", "--rebuild", "--quiet", "--define", "_topdir "+top, srpm)
	cmd.Env = append(os.Environ(), fmt.Sprintf("SOURCE_DATE_EPOCH=%d", a.Pkg.Released().Unix()), "TZ=UTC")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rpmbuild --rebuild: %v\n%s", err, out)
	}
	rebuilt, _ := filepath.Glob(filepath.Join(top, "RPMS", "noarch", "pg_lease_18-"+ver+"-2PGSTY*.noarch.rpm"))
	if len(rebuilt) != 1 {
		t.Fatalf("rpmbuild --rebuild wrote %v", rebuilt)
	}
	bin := "el9.x86_64/" + name + ".noarch.rpm"
	files := map[string]string{"pure Go": filepath.Join(top, "pure.rpm"), "rpmbuild": filepath.Join(top, "rpmbuild.rpm"), "rpmbuild --rebuild": rebuilt[0]}
	os.WriteFile(files["pure Go"], pure[bin], 0o644)
	os.WriteFile(files["rpmbuild"], real[bin], 0o644)
	want := "- " + HostileNote + "\n"
	var first string
	for who, f := range files {
		out, err := exec.Command("rpm", "-qp", "--qf", "%{PACKAGER}\n[* %{CHANGELOGNAME}\n%{CHANGELOGTEXT}\n]", f).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: rpm -qp: %v\n%s", who, err, out)
		}
		got := string(out)
		if !strings.HasPrefix(got, model.Packages.Maintainer+"\n") {
			t.Errorf("%s: Packager is not %q:\n%s", who, model.Packages.Maintainer, got)
		}
		if !strings.Contains(got, want) || strings.Contains(got, "uses hi") {
			t.Errorf("%s: the changelog does not carry the note as written (%q):\n%s", who, want, got)
		}
		if first == "" {
			first = got
		} else if got != first {
			t.Errorf("%s: changelog differs from another builder's:\n%s\nagainst\n%s", who, got, first)
		}
	}
}
