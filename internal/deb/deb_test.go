package deb

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/sourcetree"
	"github.com/pglease/pglease-gen/internal/testenv"
)

func options(builder string, when time.Time, majors ...int) Options {
	if len(majors) == 0 {
		majors = model.PgLease.Majors
	}
	return Options{Ext: model.PgLease, Pkg: model.Packages, Src: pglease.Files, Majors: majors,
		Suffix: model.Packages.Suffixes[0], Builder: builder, Time: when}
}

func build(t *testing.T, o Options) render.Files {
	t.Helper()
	files, _, err := Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func debOf(t *testing.T, files render.Files, major int) []byte {
	t.Helper()
	for _, n := range files.Names() {
		if strings.HasSuffix(n, "/"+model.PgLease.DebPackage(major)+"_"+model.PgLease.Version()+"-1PGSTY~bookworm_all.deb") {
			return files[n]
		}
	}
	t.Fatalf("no deb for PostgreSQL %d in %v", major, files.Names())
	return nil
}

func readDeb(t *testing.T, b []byte) Archive {
	t.Helper()
	a, err := Read(b)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDebLayout checks the pure Go deb against what dpkg-deb writes: the ar
// members in order, ./-relative tar names, owners, modes, every time the
// epoch, and the control fields.
func TestDebLayout(t *testing.T) {
	when := model.Packages.Released()
	a := readDeb(t, debOf(t, build(t, options(PureGo, when, 17)), 17))
	if fmt.Sprint(a.ArNames) != "[debian-binary control.tar.xz data.tar.xz]" {
		t.Errorf("ar members %v", a.ArNames)
	}
	var names []string
	for _, m := range append(a.Control, a.Data...) {
		names = append(names, m.Name)
		if m.Uid != 0 || m.Gid != 0 || m.Uname != "root" || m.Gname != "root" || m.MTime != when.Unix() {
			t.Errorf("%s: owner %d/%d %s/%s, mtime %d", m.Name, m.Uid, m.Gid, m.Uname, m.Gname, m.MTime)
		}
	}
	want := "./ ./control ./md5sums ./ ./usr/ ./usr/share/ ./usr/share/doc/ ./usr/share/doc/postgresql-17-pg-lease/ " +
		"./usr/share/doc/postgresql-17-pg-lease/README.md.gz ./usr/share/doc/postgresql-17-pg-lease/changelog.Debian.gz ./usr/share/doc/postgresql-17-pg-lease/changelog.gz " +
		"./usr/share/doc/postgresql-17-pg-lease/copyright ./usr/share/postgresql/ ./usr/share/postgresql/17/ " +
		"./usr/share/postgresql/17/extension/ ./usr/share/postgresql/17/extension/pg_lease--0.1.0--0.2.0.sql " +
		"./usr/share/postgresql/17/extension/pg_lease--0.1.0.sql ./usr/share/postgresql/17/extension/pg_lease--0.2.0--0.3.0.sql " +
		"./usr/share/postgresql/17/extension/pg_lease--0.2.0--0.4.0.sql " +
		"./usr/share/postgresql/17/extension/pg_lease--0.2.0.sql ./usr/share/postgresql/17/extension/pg_lease--0.3.0--0.4.0.sql " +
		"./usr/share/postgresql/17/extension/pg_lease--0.3.0.sql ./usr/share/postgresql/17/extension/pg_lease--0.4.0--0.5.0.sql " +
		"./usr/share/postgresql/17/extension/pg_lease--0.4.0.sql ./usr/share/postgresql/17/extension/pg_lease--0.5.0--0.5.1.sql ./usr/share/postgresql/17/extension/pg_lease--0.5.0.sql ./usr/share/postgresql/17/extension/pg_lease--0.5.1.sql " +
		"./usr/share/postgresql/17/extension/pg_lease.control"
	if strings.Join(names, " ") != want {
		t.Errorf("members:\n%s\nwant\n%s", strings.Join(names, " "), want)
	}
	control, _ := a.ControlFile()
	for _, f := range []string{"Package: postgresql-17-pg-lease\n", "Version: " + model.PgLease.Version() + "-1PGSTY~bookworm\n", "Architecture: all\n", "Depends: postgresql-17\n", "Source: pg-lease\n"} {
		if !bytes.Contains(control, []byte(f)) {
			t.Errorf("control lacks %q:\n%s", f, control)
		}
	}
}

// TestDebReproducible builds twice a second apart, with an epoch in the
// past and in the future, and wants the same bytes.
func TestDebReproducible(t *testing.T) {
	for _, when := range []time.Time{time.Unix(1700000000, 0), time.Now().Add(10 * 365 * 24 * time.Hour).Truncate(time.Second)} {
		a := build(t, options(PureGo, when, 16))
		time.Sleep(1100 * time.Millisecond)
		b := build(t, options(PureGo, when, 16))
		for _, n := range a.Names() {
			if !bytes.Equal(a[n], b[n]) {
				t.Errorf("epoch %d: %s differs between two builds", when.Unix(), n)
			}
		}
	}
}

// TestGenControlMatchesPgBuildext renders debian/control in Go and has
// pg_buildext updatecontrol make it from debian/control.in for the same
// majors: the same bytes.
func TestGenControlMatchesPgBuildext(t *testing.T) {
	testenv.Tools(t, "pg_buildext")
	d, err := sourcetree.NewData(model.PgLease, model.Packages, pglease.Files, "PGSTY")
	if err != nil {
		t.Fatal(err)
	}
	sources, err := sourcetree.Sources(d, pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "debian"), 0o755)
	for _, n := range []string{"debian/control.in", "debian/pgversions", "debian/changelog"} {
		os.WriteFile(filepath.Join(dir, n), sources[n], 0o644)
	}
	cmd := exec.Command("pg_buildext", "updatecontrol")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PG_SUPPORTED_VERSIONS="+strings.ReplaceAll(model.PgLease.MajorList(), ",", " "))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pg_buildext updatecontrol: %v\n%s", err, out)
	}
	native, _ := os.ReadFile(filepath.Join(dir, "debian/control"))
	if !bytes.Equal(native, sources["debian/control"]) {
		t.Errorf("debian/control differs from pg_buildext's:\nours:\n%s\npg_buildext:\n%s", sources["debian/control"], native)
	}
}

// TestBuildersAgree builds PostgreSQL 15's deb in pure Go and with
// dpkg-buildpackage (make deps installs postgresql-server-dev-15) and
// compares them member by member. What differs by nature: the compressed
// bytes (xz here, and gzip of the doc files: Go's deflate is not GNU
// gzip's), so compressed files are compared after decompressing, and the
// md5sums lines of those files.
//
// It does so for three releases and both forms of version: the tarball's
// own codename, and two that the dpkg builder sets with the tree's
// debian/rules set-codename, one in PGDG's form.
func TestBuildersAgree(t *testing.T) {
	testenv.Tools(t, "dpkg-buildpackage", "pg_buildext", "dh")
	for _, c := range []struct{ codename, suffix string }{{"bookworm", "PGSTY"}, {"trixie", "PGSTY"}, {"noble", "PGDG"}} {
		t.Run(c.codename+"-"+c.suffix, func(t *testing.T) { buildersAgree(t, c.codename, c.suffix) })
	}
}

func buildersAgree(t *testing.T, codename, suffix string) {
	when := model.Packages.Released()
	d, _ := model.DistroNamed(codename)
	opts := func(builder string) Options {
		o := options(builder, when, 15)
		o.Distros, o.Suffix = []model.Distro{d}, suffix
		return o
	}
	version := model.Packages.For(d).DebVersion(model.PgLease.Version(), model.Packages.Release, suffix)
	name := model.PgLease.DebPackage(15) + "_" + version + "_all.deb"
	pureFiles, nativeFiles := build(t, opts(PureGo)), build(t, opts(Dpkg))
	p := path.Join(RepoDir, PoolPath(model.PgLease.DebSource()), name)
	if pureFiles[p] == nil || nativeFiles[p] == nil {
		t.Fatalf("%s: pure Go wrote it %v, dpkg %v", p, pureFiles[p] != nil, nativeFiles[p] != nil)
	}
	SameDeb(t, pureFiles[p], nativeFiles[p])
}

// SameDeb fails t where the deb pureGo (ours) and the deb native
// (dpkg-buildpackage's) differ: ar members and their times, the control
// file, then every member of control.tar and data.tar, its header and its
// contents (gzip members unpacked; md5sums aside, it follows the rest).
func SameDeb(t *testing.T, pureGo, native []byte) {
	t.Helper()
	pure, nat := readDeb(t, pureGo), readDeb(t, native)
	if fmt.Sprint(pure.ArNames, pure.ArTimes) != fmt.Sprint(nat.ArNames, nat.ArTimes) {
		t.Errorf("ar members: pure Go %v %v, dpkg %v %v", pure.ArNames, pure.ArTimes, nat.ArNames, nat.ArTimes)
	}
	pc, _ := pure.ControlFile()
	nc, _ := nat.ControlFile()
	if !bytes.Equal(pc, nc) {
		t.Errorf("control files differ:\npure Go:\n%s\ndpkg:\n%s", pc, nc)
	}
	for _, pair := range [][2][]Member{{pure.Control, nat.Control}, {pure.Data, nat.Data}} {
		a, b := pair[0], pair[1]
		if len(a) != len(b) {
			names := map[string]int{}
			for _, m := range a {
				names[m.Name]++
			}
			for _, m := range b {
				names[m.Name]--
			}
			var only []string
			for n, c := range names {
				if c != 0 {
					only = append(only, fmt.Sprintf("%s (%+d)", n, c))
				}
			}
			slices.Sort(only)
			t.Fatalf("pure Go has %d members, dpkg %d; in one only (+ pure Go, - dpkg): %v", len(a), len(b), only)
		}
		for i := range a {
			x, y := a[i], b[i]
			if x.Name == "./md5sums" {
				continue
			}
			if x.Name != y.Name || x.Mode != y.Mode || x.Type != y.Type || x.Uid != y.Uid || x.Gid != y.Gid || x.Uname != y.Uname || x.Gname != y.Gname || x.MTime != y.MTime {
				t.Errorf("member %d: pure Go %s %o %c %d/%d %s/%s %d, dpkg %s %o %c %d/%d %s/%s %d", i,
					x.Name, x.Mode, x.Type, x.Uid, x.Gid, x.Uname, x.Gname, x.MTime, y.Name, y.Mode, y.Type, y.Uid, y.Gid, y.Uname, y.Gname, y.MTime)
			}
			bx, by := x.Body, y.Body
			if strings.HasSuffix(x.Name, ".gz") {
				bx, by = gunzip(t, bx), gunzip(t, by)
			}
			if !bytes.Equal(bx, by) {
				t.Errorf("%s: contents differ", x.Name)
			}
		}
	}
}

// TestDpkgBuilderNeedsServerDev asks the dpkg builder for a major whose
// server-dev package is not installed: a clear error.
func TestDpkgBuilderNeedsServerDev(t *testing.T) {
	testenv.Tools(t, "dpkg-buildpackage", "pg_buildext", "dh")
	if _, err := os.Stat("/usr/lib/postgresql/14/bin/pg_config"); err == nil {
		t.Skip("postgresql-server-dev-14 is installed here")
	}
	_, _, err := Build(context.Background(), options(Dpkg, model.Packages.Released(), 14, 15))
	if err == nil || !strings.Contains(err.Error(), "needs postgresql-server-dev-14: install them, or build those majors with --builder go") {
		t.Errorf("err = %v", err)
	}
}

// allDistros are the options of a build for every distribution.
func allDistros(o Options) Options {
	o.Distros = model.Distros
	return o
}

// TestLintian lints the pure Go debs: no error and no warning. make test
// lints a sample that has every release and every major in it (the newest
// major's deb of each release, and each major's of the first release:
// lintian takes a minute of both cores for all 30); make lintian lints
// them all (-deb.lintian-all).
func TestLintian(t *testing.T) {
	testenv.Tools(t, "lintian")
	files := build(t, allDistros(options(PureGo, model.Packages.Released())))
	dir := t.TempDir()
	if err := render.Write(dir, files); err != nil {
		t.Fatal(err)
	}
	debs, _ := filepath.Glob(filepath.Join(dir, RepoDir, PoolPath("pg-lease"), "*.deb"))
	releases := model.OfFormat(model.Distros, model.Deb)
	if len(debs) != len(model.PgLease.Majors)*len(releases) {
		t.Fatalf("%d debs", len(debs))
	}
	if !*testenv.DebLintianAll {
		newest := model.PgLease.Majors[len(model.PgLease.Majors)-1]
		debs = slices.DeleteFunc(debs, func(deb string) bool {
			name := filepath.Base(deb)
			return !strings.HasPrefix(name, model.PgLease.DebPackage(newest)+"_") && !strings.Contains(name, "~"+releases[0].Name+"_")
		})
		if want := len(releases) + len(model.PgLease.Majors) - 1; len(debs) != want {
			t.Fatalf("the sample has %d debs, want %d: %v", len(debs), want, debs)
		}
	}
	out, err := exec.Command("lintian", append([]string{"--fail-on", "error,warning", "--display-level", ">=warning"}, debs...)...).CombinedOutput()
	// as root lintian says so first; that line is not about the packages
	report := bytes.TrimSpace(bytes.ReplaceAll(out, []byte("running with root privileges is not recommended!"), nil))
	if err != nil || len(report) > 0 {
		t.Errorf("lintian: %v\n%s", err, out)
	}
}

// TestAptReadsTheRepository has apt-get update read each suite of the
// repository from a [trusted=yes] file: line, for each architecture, in a
// scratch apt root, and asks apt-cache what it offers.
func TestAptReadsTheRepository(t *testing.T) {
	testenv.Tools(t, "apt-get", "apt-cache")
	files := build(t, allDistros(options(PureGo, model.Packages.Released())))
	dir := t.TempDir()
	if err := render.Write(dir, files); err != nil {
		t.Fatal(err)
	}
	for _, d := range model.OfFormat(model.Distros, model.Deb) {
		for _, arch := range model.Packages.DebArches {
			aptReads(t, dir, d, arch)
		}
	}
}

func aptReads(t *testing.T, dir string, d model.Distro, arch string) {
	t.Helper()
	{
		root := filepath.Join(dir, "root-"+d.Name+"-"+arch)
		for _, d := range []string{"etc/apt/sources.list.d", "etc/apt/preferences.d", "var/lib/apt/lists/partial", "var/cache/apt/archives/partial", "var/lib/dpkg"} {
			os.MkdirAll(filepath.Join(root, d), 0o755)
		}
		os.WriteFile(filepath.Join(root, "var/lib/dpkg/status"), nil, 0o644)
		list := fmt.Sprintf("deb [trusted=yes] file:%s %s %s\n", filepath.Join(dir, RepoDir), d.Name, Component)
		os.WriteFile(filepath.Join(root, "etc/apt/sources.list"), []byte(list), 0o644)
		opts := []string{"-o", "Dir=" + root, "-o", "Dir::State::status=" + filepath.Join(root, "var/lib/dpkg/status"),
			"-o", "APT::Architecture=" + arch, "-o", "APT::Architectures=" + arch, "-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root"}
		if out, err := exec.Command("apt-get", append(opts, "update")...).CombinedOutput(); err != nil || bytes.Contains(out, []byte("W:")) || bytes.Contains(out, []byte("E:")) {
			t.Fatalf("%s %s: apt-get update: %v\n%s", d.Name, arch, err, out)
		}
		out, err := exec.Command("apt-cache", append(opts, "show", "postgresql-17-pg-lease")...).CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("Version: "+model.PgLease.Version()+"-1PGSTY~"+d.Name+"\n")) || !bytes.Contains(out, []byte("Depends: postgresql-17\n")) ||
			bytes.Count(out, []byte("Package: ")) != 1 {
			t.Errorf("%s %s: apt-cache show: %v\n%s", d.Name, arch, err, out)
		}
	}
}

// TestRepoListsArchitectureSpecificDebsOnce puts an amd64 deb beside an
// Architecture: all one: the amd64 index lists both, the arm64 index only
// the one for all.
func TestRepoListsArchitectureSpecificDebsOnce(t *testing.T) {
	when := model.Packages.Released()
	all, err := Pack(Package{Name: "a", Version: "1", Maintainer: "m", Summary: "s", Description: " d", BuildTime: when})
	if err != nil {
		t.Fatal(err)
	}
	amd, err := Pack(Package{Name: "b", Version: "1", Arch: "amd64", Maintainer: "m", Summary: "s", Description: " d", BuildTime: when, Gzip: true})
	if err != nil {
		t.Fatal(err)
	}
	files, err := Repo(model.Packages, "", "x", map[string][]byte{"a_1_all.deb": all, "b_1_amd64.deb": amd}, nil, when)
	if err != nil {
		t.Fatal(err)
	}
	for arch, want := range map[string]string{"amd64": "Package: a Package: b", "arm64": "Package: a"} {
		var got []string
		for _, l := range strings.Split(string(files["apt/dists/bookworm/main/binary-"+arch+"/Packages"]), "\n") {
			if strings.HasPrefix(l, "Package: ") {
				got = append(got, l)
			}
		}
		if strings.Join(got, " ") != want {
			t.Errorf("binary-%s lists %v, want %s", arch, got, want)
		}
	}
}
