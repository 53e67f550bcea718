package artifact

import (
	"bytes"
	"context"
	"path"
	"strings"
	"testing"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
)

// TestSubsetsAgreeOnSharedFiles: builds of different majors of one
// version (--pg 17, --pg 18, and all) write every file they share in the
// pools byte for byte alike: one .dsc, one debian.tar.xz and one orig
// tarball per release, one SRPM and one RPM per major, so that two
// builds' pools merge without a conflict (before, --pg 17's .dsc named one
// binary package and --pg all's six, under one name). The indices
// (Packages, Sources, Release, repodata) list what each build made and
// are rebuilt for a merged tree.
func TestSubsetsAgreeOnSharedFiles(t *testing.T) {
	build := func(majors ...int) render.Files {
		t.Helper()
		var ds []model.Distro
		for _, n := range []string{"el9", "bookworm"} {
			d, ok := model.DistroNamed(n)
			if !ok {
				t.Fatalf("no distribution %s in the model", n)
			}
			ds = append(ds, d)
		}
		files, _, err := Build(context.Background(), Options{Ext: model.PgLease, Pkg: model.Packages, Src: pglease.Files,
			Majors: majors, Distros: ds, Suffix: model.Packages.Suffixes[0], Time: model.Packages.Released()})
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	pooled := func(name string) bool {
		for _, s := range []string{".dsc", ".debian.tar.xz", ".orig.tar.gz", ".deb", ".rpm"} {
			if strings.HasSuffix(name, s) {
				return true
			}
		}
		return false
	}
	a, b, all := build(17), build(18), build(model.PgLease.Majors...)
	shared := 0
	for _, other := range []render.Files{b, all} {
		for name, x := range a {
			y, ok := other[name]
			if !ok || !pooled(name) {
				continue
			}
			shared++
			if !bytes.Equal(x, y) {
				t.Errorf("%s differs between the build of 17 and another of the same version", path.Base(name))
			}
		}
	}
	for name, x := range b {
		if y, ok := all[name]; ok && pooled(name) && !bytes.Equal(x, y) {
			t.Errorf("%s differs between the build of 18 and that of every major", path.Base(name))
		}
	}
	// (the source package of each release is in all three)
	if shared < 4 {
		t.Errorf("only %d pooled files shared: the test compares nothing", shared)
	}
}
