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
	d, err := dist.NewData(o.Ext, o.Pkg, o.Src, o.Suffix)
	if err != nil {
		return nil, nil, err
	}
	sources, err := dist.Sources(d, o.Src)
	if err != nil {
		return nil, nil, err
	}
	debs := map[string][]byte{}
	majorOf := map[string]int{}
	var native map[int][]byte
	if o.Builder == Dpkg {
		tarball, err := dist.Tarball(sources, o.Ext.SourceDir(), o.Time)
		if err != nil {
			return nil, nil, err
		}
		if native, err = RunDpkg(ctx, o.Ext, tarball, o.Majors, o.Time); err != nil {
			return nil, nil, err
		}
	} else if o.Builder != PureGo && o.Builder != "" {
		return nil, nil, fmt.Errorf("unknown deb builder %q: use %s or %s", o.Builder, PureGo, Dpkg)
	}
	for _, major := range o.Majors {
		p, err := Contents(d, sources, major, o.Time)
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
		step("PostgreSQL %d: %s (%s)", major, p.FileName(), cmp.Or(o.Builder, PureGo))
	}
	files, err := Repo(o.Pkg, o.Ext.DebSource(), debs, o.Time)
	if err == nil && o.Sign != nil {
		err = SignRepo(files, o.Sign)
	}
	if err != nil {
		return nil, nil, err
	}
	var arts []dist.Artifact
	for _, name := range files.Names() {
		switch {
		case strings.HasSuffix(name, ".deb"):
			arts = append(arts, dist.Artifact{Path: name, Kind: "deb", Major: majorOf[path.Base(name)]})
		case strings.HasSuffix(name, "/Release"), strings.HasSuffix(name, "/InRelease"):
			arts = append(arts, dist.Artifact{Path: name, Kind: "apt-release"})
		case strings.HasSuffix(name, "/Release.gpg"):
			arts = append(arts, dist.Artifact{Path: name, Kind: "signature"})
		}
	}
	step("apt repository %s: %d packages for %s", RepoDir, len(debs), strings.Join(o.Pkg.DebArches, ", "))
	return files, arts, nil
}

// RunDpkg builds the debs of the majors from the source tarball as a
// Debian host would: pg_buildext updatecontrol for those majors, then
// dpkg-buildpackage -b -us -uc (tests skipped: the suites run in the
// install proofs). Every major needs its postgresql-server-dev-N.
func RunDpkg(ctx context.Context, ext model.Extension, tarball []byte, majors []int, built time.Time) (map[int][]byte, error) {
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
		"PG_SUPPORTED_VERSIONS="+strings.Join(versions, " "), "DEB_BUILD_OPTIONS=nocheck")
	src := filepath.Join(top, ext.SourceDir())
	for _, step := range []struct {
		dir  string
		argv []string
	}{
		{top, []string{"tar", "-xzf", tgz}},
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
