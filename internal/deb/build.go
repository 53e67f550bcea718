package deb

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/sourcetree"
)

// Builders.
const (
	PureGo = "go"   // Pack, the default
	Dpkg   = "dpkg" // dpkg-buildpackage on the source tree
)

// Options configure Build; Builder is one of the builders above.
type Options = sourcetree.Options

// Build makes, for every distribution, the source package (upstream's
// tarball, that release's debian.tar.xz and .dsc), the deb of every major
// and the apt repository tree, in memory.
func Build(ctx context.Context, o Options) (render.Files, []sourcetree.Artifact, error) {
	step := o.Step
	if step == nil {
		step = func(string, ...any) {}
	}
	if o.Builder != Dpkg && o.Builder != PureGo && o.Builder != "" {
		return nil, nil, fmt.Errorf("unknown deb builder %q: use %s or %s", o.Builder, PureGo, Dpkg)
	}
	orig, err := sourcetree.UpstreamTarball(o.Ext, o.Src)
	if err != nil {
		return nil, nil, err
	}
	files := render.Files{}
	var arts []sourcetree.Artifact
	var names []string
	for _, dis := range o.DistrosOf(model.Deb) {
		// the debs of one release: its codename in their versions and in
		// their changelog
		pkg := o.Pkg.For(dis)
		dd, err := sourcetree.NewData(o.Ext, pkg, o.Src, o.Suffix)
		if err != nil {
			return nil, nil, err
		}
		ds, err := sourcetree.Sources(dd, o.Src)
		if err != nil {
			return nil, nil, err
		}
		majors := dis.MajorsOf(o.Majors)
		// one source package per version and release, whatever majors
		// this build makes debs of: its debian/ names every major the
		// release gets (a .dsc of a subset differed in its Binary: from
		// the whole build's, under the same name, and a repository
		// merged from two builds had two)
		debian, err := sourcetree.Debian(dd, o.Src, dis.MajorsOf(o.Ext.Majors))
		if err != nil {
			return nil, nil, err
		}
		src, err := MakeSource(o.Ext.DebSource(), o.Ext.Version(), orig, debian, o.Time, o.Sign)
		if err != nil {
			return nil, nil, err
		}
		var native map[int][]byte
		if o.Builder == Dpkg {
			if native, err = RunDpkg(ctx, o.Ext, src, majors, o.Time); err != nil {
				return nil, nil, err
			}
		}
		debs := map[string][]byte{}
		majorOf := map[string]int{}
		for _, major := range majors {
			p, err := Contents(dd, ds, major, o.Time)
			if err != nil {
				return nil, nil, err
			}
			b := native[major]
			if b == nil {
				if b, err = Pack(p); err != nil {
					return nil, nil, err
				}
			}
			debs[p.FileName()] = b
			majorOf[p.FileName()] = major
			step("%s, PostgreSQL %d: %s (%s)", dis.Title(), major, p.FileName(), cmp.Or(o.Builder, PureGo))
		}
		// a published tree's suite (build --into) keeps what it holds:
		// its debs and source packages beside this build's, its indices
		// one generation by hash, its Date never going back
		h, err := heldSuite(o.Held, pkg.DebCodename)
		if err != nil {
			return nil, nil, err
		}
		srcs := []Source{src}
		for n, b := range h.debs {
			if _, ok := debs[n]; !ok {
				debs[n] = b
			}
		}
		for _, s := range h.srcs {
			if s.DscName() != src.DscName() {
				srcs = append(srcs, s)
			}
		}
		slices.SortFunc(srcs, func(a, b Source) int { return strings.Compare(a.DscName(), b.DscName()) })
		when := o.Time
		if h.date.After(when) {
			when = h.date
		}
		suite, err := Repo(pkg, o.Suffix, o.Ext.DebSource(), debs, srcs, when)
		for n, b := range h.byHash {
			if _, ok := suite[n]; !ok {
				suite[n] = b
			}
		}
		if err == nil && o.Sign != nil {
			err = SignRepo(suite, o.RepoSigner())
		}
		if err != nil {
			return nil, nil, err
		}
		step("%s: source package %s", dis.Title(), src.DscName())
		for _, name := range suite.Names() {
			if b, ok := files[name]; ok && !bytes.Equal(b, suite[name]) {
				return nil, nil, fmt.Errorf("%s differs between two releases' suites", name)
			}
			files[name] = suite[name]
			kind := ""
			switch base := path.Base(name); {
			case strings.HasSuffix(name, ".deb"):
				if major, ok := majorOf[base]; ok { // (not one a published tree held)
					arts = append(arts, sourcetree.Artifact{Path: name, Kind: "deb", Major: major, Distro: dis.Name})
				}
			case base == src.DscName():
				kind = "dsc"
			case base == OrigName(o.Ext.DebSource(), o.Ext.Version()) && len(names) == 0:
				kind = "orig-tarball" // one file, in every release's source package
			case strings.HasSuffix(name, ".debian.tar.xz") && src.Files[base] != nil:
				kind = "debian-tarball"
			case strings.HasSuffix(name, "/Release"), strings.HasSuffix(name, "/InRelease"):
				kind = "apt-release"
			case strings.HasSuffix(name, "/Release.gpg"):
				kind = "signature"
			}
			if kind == "orig-tarball" {
				arts = append(arts, sourcetree.Artifact{Path: name, Kind: kind})
			} else if kind != "" {
				arts = append(arts, sourcetree.Artifact{Path: name, Kind: kind, Distro: dis.Name})
			}
		}
		names = append(names, dis.Name)
	}
	if len(names) > 0 {
		step("apt repository %s: suites %s for %s and source", RepoDir, strings.Join(names, ", "), strings.Join(o.Pkg.DebArches, ", "))
	}
	return files, arts, nil
}

// RunDpkg builds the debs of the majors from the source package as a
// Debian host would: dpkg-source -x of its .dsc (which checks the files
// against it), pg_buildext updatecontrol for those majors, then
// dpkg-buildpackage -b -us -uc (tests skipped: the suites run in the
// install proofs). Every major needs its postgresql-server-dev-N.
func RunDpkg(ctx context.Context, ext model.Extension, src Source, majors []int, built time.Time) (map[int][]byte, error) {
	for _, tool := range []string{"dpkg-buildpackage", "dpkg-source", "pg_buildext", "dh"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s is not installed: apt-get install dpkg-dev debhelper postgresql-server-dev-all, or use --builder go", tool)
		}
	}
	var missing []string
	var versions []string
	for _, m := range majors {
		if _, err := os.Stat(fmt.Sprintf("/usr/lib/postgresql/%d/bin/pg_config", m)); err != nil {
			missing = append(missing, fmt.Sprintf("postgresql-server-dev-%d", m))
		}
		versions = append(versions, strconv.Itoa(m))
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the dpkg builder needs %s: install them, or build those majors with --builder go", strings.Join(missing, ", "))
	}
	top, err := os.MkdirTemp("", "pglease-dpkg-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(top)
	for name, b := range src.Files {
		if err := os.WriteFile(filepath.Join(top, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	env := append(os.Environ(), "SOURCE_DATE_EPOCH="+strconv.FormatInt(built.Unix(), 10), "TZ=UTC", "LC_ALL=C",
		"PG_SUPPORTED_VERSIONS="+strings.Join(versions, " "), "DEB_BUILD_OPTIONS=nocheck", "DEB_BUILD_PROFILES=nocheck")
	tree := filepath.Join(top, ext.SourceDir())
	for _, step := range []struct {
		dir  string
		argv []string
	}{
		{top, []string{"dpkg-source", "-x", src.DscName(), tree}},
		{tree, []string{"pg_buildext", "updatecontrol"}},
		{tree, []string{"dpkg-buildpackage", "-b", "-us", "-uc"}},
	} {
		cmd := exec.CommandContext(ctx, step.argv[0], step.argv[1:]...)
		cmd.Dir, cmd.Env = step.dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s: %w\n%s", strings.Join(step.argv, " "), err, out)
		}
	}
	debs := map[int][]byte{}
	for _, m := range majors {
		matches, _ := filepath.Glob(filepath.Join(top, ext.DebPackage(m)+"_*_all.deb"))
		if len(matches) != 1 {
			return nil, errors.New("dpkg-buildpackage did not write " + ext.DebPackage(m) + "_*_all.deb")
		}
		if debs[m], err = os.ReadFile(matches[0]); err != nil {
			return nil, err
		}
	}
	return debs, nil
}
