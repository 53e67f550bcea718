package deb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pglease/pglease-gen/internal/dist"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
)

// Builders.
const (
	PureGo = "go"   // Pack, the default
	Dpkg   = "dpkg" // dpkg-buildpackage on the source tree
)

// Options configure Build; Builder is one of the builders above.
type Options = dist.Options

// Build makes the deb of every major and the apt repository tree, in
// memory.
func Build(ctx context.Context, o Options) (render.Files, []dist.Artifact, error) {
	step := o.Step
	if step == nil {
		step = func(string, ...any) {}
	}
	_, sources, err := dist.SourcesOf(o)
	if err != nil {
		return nil, nil, err
	}
	if o.Builder != Dpkg && o.Builder != PureGo && o.Builder != "" {
		return nil, nil, fmt.Errorf("unknown deb builder %q: use %s or %s", o.Builder, PureGo, Dpkg)
	}
	var tarball []byte
	if o.Builder == Dpkg {
		if tarball, err = dist.Tarball(sources, o.Ext.SourceDir(), o.Time); err != nil {
			return nil, nil, err
		}
	}
	files := render.Files{}
	var arts []dist.Artifact
	var names []string
	for _, dis := range o.DistrosOf(model.Deb) {
		// the debs of one release: its codename in their versions and in
		// their changelog
		pkg := o.Pkg.For(dis)
		dd, err := dist.NewData(o.Ext, pkg, o.Src, o.Suffix)
		if err != nil {
			return nil, nil, err
		}
		ds, err := dist.Sources(dd, o.Src)
		if err != nil {
			return nil, nil, err
		}
		majors := dis.MajorsOf(o.Majors)
		var native map[int][]byte
		if o.Builder == Dpkg {
			if native, err = RunDpkg(ctx, o.Ext, tarball, majors, o.Time, dis.Name); err != nil {
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
		suite, err := Repo(pkg, o.Ext.DebSource(), debs, o.Time)
		if err == nil && o.Sign != nil {
			err = SignRepo(suite, o.Sign)
		}
		if err != nil {
			return nil, nil, err
		}
		for _, name := range suite.Names() {
			files[name] = suite[name]
			switch {
			case strings.HasSuffix(name, ".deb"):
				arts = append(arts, dist.Artifact{Path: name, Kind: "deb", Major: majorOf[path.Base(name)], Distro: dis.Name})
			case strings.HasSuffix(name, "/Release"), strings.HasSuffix(name, "/InRelease"):
				arts = append(arts, dist.Artifact{Path: name, Kind: "apt-release", Distro: dis.Name})
			case strings.HasSuffix(name, "/Release.gpg"):
				arts = append(arts, dist.Artifact{Path: name, Kind: "signature", Distro: dis.Name})
			}
		}
		names = append(names, dis.Name)
	}
	if len(names) > 0 {
		step("apt repository %s: suites %s for %s", RepoDir, strings.Join(names, ", "), strings.Join(o.Pkg.DebArches, ", "))
	}
	return files, arts, nil
}

// RunDpkg builds the debs of the majors from the source tarball as a
// Debian host would: pg_buildext updatecontrol for those majors, then
// dpkg-buildpackage -b -us -uc (tests skipped: the suites run in the
// install proofs). Every major needs its postgresql-server-dev-N. For a
// codename other than the changelog's, the tree's own `debian/rules
// set-codename CODENAME=...` runs first, as a packager would run it.
func RunDpkg(ctx context.Context, ext model.Extension, tarball []byte, majors []int, built time.Time, codename string) (map[int][]byte, error) {
	for _, tool := range []string{"dpkg-buildpackage", "pg_buildext", "dh"} {
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
	tgz := filepath.Join(top, ext.Tarball())
	if err := os.WriteFile(tgz, tarball, 0o644); err != nil {
		return nil, err
	}
	env := append(os.Environ(), "SOURCE_DATE_EPOCH="+strconv.FormatInt(built.Unix(), 10), "TZ=UTC", "LC_ALL=C",
		"PG_SUPPORTED_VERSIONS="+strings.Join(versions, " "), "DEB_BUILD_OPTIONS=nocheck", "DEB_BUILD_PROFILES=nocheck")
	src := filepath.Join(top, ext.SourceDir())
	for _, step := range []struct {
		dir  string
		argv []string
	}{
		{top, []string{"tar", "-xzf", tgz}},
		{src, []string{"debian/rules", "set-codename", "CODENAME=" + codename}},
		{src, []string{"pg_buildext", "updatecontrol"}},
		{src, []string{"dpkg-buildpackage", "-b", "-us", "-uc"}},
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
