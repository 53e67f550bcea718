package artifact

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"testing"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/deb"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// grown builds version v (its packaging as it was published) of majors
// for el9 and bookworm into held (nil: a new tree).
func grown(t *testing.T, v string, majors []int, held render.Files, o Options) (render.Files, error) {
	t.Helper()
	ext, pkg, err := model.AsPublished(v)
	if err != nil {
		t.Fatal(err)
	}
	var ds []model.Distro
	for _, n := range []string{"el9", "bookworm"} {
		d, _ := model.DistroNamed(n)
		ds = append(ds, d)
	}
	o.Ext, o.Pkg, o.Src, o.Majors, o.Distros, o.Suffix, o.Time, o.Held = ext, pkg, pglease.Files, majors, ds, model.Packages.Suffixes[0], pkg.Released(), held
	files, _, err := Build(context.Background(), o)
	return files, err
}

// listed are the file names an index lists: Packages' Filename, Sources'
// .dsc, primary's location.
func listed(t *testing.T, files render.Files) (debs, dscs, rpms []string) {
	t.Helper()
	for _, s := range strings.Split(string(files["apt/dists/bookworm/main/binary-amd64/Packages"]), "\n") {
		if v, ok := strings.CutPrefix(s, "Filename: "); ok {
			debs = append(debs, path.Base(v))
		}
	}
	for _, s := range strings.Split(string(files["apt/dists/bookworm/main/source/Sources"]), "\n") {
		if f := strings.Fields(s); len(f) == 3 && strings.HasSuffix(f[2], ".dsc") && len(f[0]) == 64 {
			dscs = append(dscs, f[2])
		}
	}
	for name, b := range files {
		if strings.HasPrefix(name, "el9.x86_64/repodata/") && strings.HasSuffix(name, "-primary.xml.gz") && strings.Contains(string(files["el9.x86_64/repodata/repomd.xml"]), path.Base(name)) {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(string(plain), "\n") {
				if _, v, ok := strings.Cut(l, `<location href="`); ok {
					href, _, _ := strings.Cut(v, `"`)
					rpms = append(rpms, href)
				}
			}
		}
	}
	slices.Sort(debs)
	slices.Sort(dscs)
	slices.Sort(rpms)
	return
}

// TestTreeGrows: 0.5.1 built --into the tree of 0.5.0 keeps 0.5.0's
// packages byte for byte in the pools and lists both versions in every
// index (Packages, Sources, primary), with the previous indices kept by
// hash and dates that do not go back; two subsets (17, then 18) merge
// into one tree; --drop removes a version from the files and the
// indices; a published file built again with other bytes, a drop of a
// version the tree does not hold, and a signing that differs from the
// tree's are refused.
func TestTreeGrows(t *testing.T) {
	old, err := grown(t, "0.5.0", []int{17}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	both, err := grown(t, "0.5.1", []int{17}, old, Options{Step: func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(said, "the tree holds 0.5.0, 0.5.1: every version's packages in the pools and the indices") {
		t.Errorf("the build does not say the tree holds both versions: %q", said)
	}
	for name, b := range old {
		if publishedOnce(name) && !bytes.Equal(both[name], b) {
			t.Errorf("%s of 0.5.0 is not in the grown tree as published", name)
		}
	}
	debs, dscs, rpms := listed(t, both)
	wantDebs := []string{"postgresql-17-pg-lease_0.5.0-1PGSTY~bookworm_all.deb", "postgresql-17-pg-lease_0.5.1-1PGSTY~bookworm_all.deb"}
	wantDscs := []string{"pg-lease_0.5.0-1PGSTY~bookworm.dsc", "pg-lease_0.5.1-1PGSTY~bookworm.dsc"}
	wantRPMs := []string{"pg_lease_17-0.5.0-1PGSTY.el9.noarch.rpm", "pg_lease_17-0.5.1-1PGSTY.el9.noarch.rpm"}
	if !slices.Equal(debs, wantDebs) || !slices.Equal(dscs, wantDscs) || !slices.Equal(rpms, wantRPMs) {
		t.Errorf("the grown tree's indices list\n%q\n%q\n%q\nwant\n%q\n%q\n%q", debs, dscs, rpms, wantDebs, wantDscs, wantRPMs)
	}
	// the old suite's indices stay fetchable by the hashes its Release gave
	for _, l := range strings.Split(string(old["apt/dists/bookworm/Release"]), "\n") {
		if f := strings.Fields(l); len(f) == 3 && len(f[0]) == 64 {
			name := path.Join("apt/dists/bookworm", path.Dir(f[2]), "by-hash/SHA256", f[0])
			if !bytes.Equal(both[name], old[path.Join("apt/dists/bookworm", f[2])]) {
				t.Errorf("the previous %s is not kept as %s", f[2], name)
			}
		}
	}
	for name := range old {
		if strings.Contains(name, "/repodata/") && !strings.HasSuffix(name, "repomd.xml") && both[name] == nil {
			t.Errorf("the previous metadata %s is not kept", name)
		}
	}
	if !strings.Contains(string(both["apt/dists/bookworm/Release"]), "Acquire-By-Hash: yes\n") {
		t.Error("the Release does not say Acquire-By-Hash")
	}

	// --pg 17, then --pg 18 into it: one tree with both, one .dsc
	merged, err := grown(t, "0.5.1", []int{18}, both, Options{})
	if err != nil {
		t.Fatalf("--pg 18 into the tree of --pg 17: %v", err)
	}
	debs, dscs, _ = listed(t, merged)
	if !slices.Contains(debs, "postgresql-18-pg-lease_0.5.1-1PGSTY~bookworm_all.deb") || !slices.Contains(debs, "postgresql-17-pg-lease_0.5.1-1PGSTY~bookworm_all.deb") || !slices.Equal(dscs, wantDscs) {
		t.Errorf("merged subsets list %q and %q", debs, dscs)
	}
	// an older version added to a newer tree: the dates stay the newest
	if d := deb.ControlField(merged["apt/dists/bookworm/Release"], "Date"); d != deb.ControlField(both["apt/dists/bookworm/Release"], "Date") {
		t.Errorf("Date went from %s to %s", deb.ControlField(both["apt/dists/bookworm/Release"], "Date"), d)
	}

	// --drop 0.5.0
	dropped, err := grown(t, "0.5.1", []int{17}, merged, Options{Drop: []string{"0.5.0"}})
	if err != nil {
		t.Fatal(err)
	}
	for name := range dropped {
		if strings.Contains(name, "0.5.0") && !strings.Contains(name, "/by-hash/") && !strings.Contains(name, "/repodata/") {
			t.Errorf("%s is left after --drop 0.5.0", name)
		}
	}
	debs, dscs, rpms = listed(t, dropped)
	if slices.ContainsFunc(slices.Concat(debs, dscs, rpms), func(n string) bool { return strings.Contains(n, "0.5.0") }) || len(debs) != 2 {
		t.Errorf("after --drop 0.5.0 the indices list %q %q %q", debs, dscs, rpms)
	}

	// refused
	for _, c := range []struct {
		what string
		o    Options
		held render.Files
		want string
	}{
		{"a published file with other bytes", Options{Pkg: model.Packaging{}}, nil, "published with other bytes"},
		{"a version the tree does not hold", Options{Drop: []string{"0.4.0"}}, both, "--drop 0.4.0: the tree holds no packages of 0.4.0 (it holds 0.5.0, 0.5.1)"},
		{"the version built", Options{Drop: []string{"0.5.1"}}, both, "--drop 0.5.1: this build makes 0.5.1"},
		{"an unsigned tree signed", Options{Sign: testenv.Signer(t, 2048)}, both, "the tree's packages are unsigned"},
	} {
		held := c.held
		o := c.o
		if c.what == "a published file with other bytes" {
			// the same version and release under another maintainer
			held = render.Files{}
			for n, b := range both {
				held[n] = b
			}
			ext, pkg, _ := model.AsPublished("0.5.1")
			el9, _ := model.DistroNamed("el9")
			pkg.Maintainer = "Another Packager <another@example.org>"
			for i := range pkg.Changelog {
				pkg.Changelog[i].By = pkg.Maintainer
			}
			o = Options{Ext: ext, Pkg: pkg, Src: pglease.Files, Majors: []int{17}, Distros: []model.Distro{el9}, Suffix: model.Packages.Suffixes[0], Time: pkg.Released(), Held: held}
			if _, _, err := Build(context.Background(), o); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: got %v, want an error saying %q", c.what, err, c.want)
			}
			continue
		}
		if _, err := grown(t, "0.5.1", []int{17}, held, o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error saying %q", c.what, err, c.want)
		}
	}
}
