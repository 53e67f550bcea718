package deb

import (
	"bytes"
	"path"
	"strings"
	"testing"

	"github.com/pglease/pglease-gen/internal/config"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// TestHostileNoteStaysText: a release note with what rpm, make, the shell
// or dpkg's substvars would read as code lands in both builders' debs'
// changelog.Debian as written, and the two debs agree member for member.
func TestHostileNoteStaysText(t *testing.T) {
	testenv.Tools(t, "dpkg-buildpackage", "pg_buildext", "dh")
	note := "uses %(echo hi) and %{dist} $(shell id) ${Newline} `id` \\n"
	a, err := config.Apply(config.Settings{Release: 2, ReleaseDate: "2026-12-05", ReleaseNote: note}, model.PgLease, model.Packages, model.CNPG)
	if err != nil {
		t.Fatal(err)
	}
	opts := func(builder string) Options {
		o := options(builder, a.Pkg.Released(), 15)
		d, _ := model.DistroNamed("bookworm")
		o.Pkg, o.Suffix, o.Distros = a.Pkg, a.Suffix, []model.Distro{d}
		return o
	}
	name := model.PgLease.DebPackage(15) + "_" + a.Pkg.DebVersion(model.PgLease.Version(), 2, a.Suffix) + "_all.deb"
	p := path.Join(RepoDir, PoolPath(model.PgLease.DebSource()), name)
	pure, native := build(t, opts(PureGo)), build(t, opts(Dpkg))
	if pure[p] == nil || native[p] == nil {
		t.Fatalf("%s: pure Go wrote it %v, dpkg %v", p, pure[p] != nil, native[p] != nil)
	}
	SameDeb(t, pure[p], native[p])
	for _, m := range readDeb(t, native[p]).Data {
		if strings.HasSuffix(m.Name, "/changelog.Debian.gz") {
			cl := gunzip(t, m.Body)
			if !bytes.Contains(cl, []byte("  * "+note+"\n")) {
				t.Errorf("dpkg's changelog.Debian does not carry the note as written:\n%s", cl)
			}
			return
		}
	}
	t.Error("no changelog.Debian.gz in the deb")
}
