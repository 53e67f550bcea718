package deb_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/deb"
	"github.com/pglease/pglease-gen/internal/images"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/sign"
	"github.com/pglease/pglease-gen/internal/sourcetree"
	"github.com/pglease/pglease-gen/internal/suite"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// TestSourcePackage uses the source package as a Debian packager does,
// with nothing set from outside: `apt-get source pg-lease` from the signed
// repository the build serves (deb-src, its Sources index), then a plain
// `dpkg-buildpackage -b -us -uc` on this host (PostgreSQL 15, the majors
// Debian 12 supports) builds the package and runs both suites at build
// time (pg_buildext installcheck in pg_virtualenv); `debian/rules clean`
// leaves the tree as it was unpacked; then Debian's autopkgtest tests the
// built tree's deb in the local image of Debian 12
// (autopkgtest-virt-docker, network none). The same tree with one expected
// output changed must fail the build: the suites really run in it
// (TestAutopkgtest shows the same for autopkgtest).
func TestSourcePackage(t *testing.T) {
	testenv.Tools(t, "dpkg-buildpackage", "dpkg-source", "pg_buildext", "pg_virtualenv", "autopkgtest", "apt-get", "docker")
	testenv.Docker(t)
	tests, err := suite.AllTests(pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	passed := []string{
		fmt.Sprintf("All %d tests passed", len(tests[suite.Regress])),
		fmt.Sprintf("All %d tests passed", len(tests[suite.Isolation])),
	}
	image := images.Ref(images.DebianRepository, 15, "amd64")
	for _, broken := range []bool{false, true} {
		t.Run(map[bool]string{false: "shipped", true: "broken-expected-output"}[broken], func(t *testing.T) {
			dir := t.TempDir()
			// pg_virtualenv's clusters run as postgres, in TMPDIR
			for _, d := range []string{dir, filepath.Dir(dir)} {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var tree string
			if broken {
				tree = unpackSource(t, dir)
				breakExpected(t, tree)
			} else {
				tree = aptGetSource(t, dir)
			}
			pristine := filepath.Join(dir, "pristine")
			if out, err := exec.Command("cp", "-a", tree, pristine).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v\n%s", err, out)
			}
			build := exec.Command("dpkg-buildpackage", "-b", "-us", "-uc")
			build.Dir = tree
			build.Env = append(cleanEnv(), "TMPDIR="+dir)
			out, err := build.CombinedOutput()
			log := string(out)
			if broken {
				if err == nil || !strings.Contains(log, "### End 15 installcheck (FAILED") {
					t.Fatalf("dpkg-buildpackage passed with a wrong expected output (err %v):\n%s", err, tailOf(log))
				}
				return // autopkgtest's own broken run is in make autopkgtest
			} else {
				if err != nil {
					t.Fatalf("dpkg-buildpackage -b -us -uc: %v\n%s", err, tailOf(log))
				}
				for _, want := range append([]string{"### End 15 installcheck ###"}, passed...) {
					if !strings.Contains(log, want) {
						t.Fatalf("dpkg-buildpackage's log lacks %q: the build-time tests did not run\n%s", want, tailOf(log))
					}
				}
			}
			debs, _ := filepath.Glob(filepath.Join(filepath.Dir(tree), model.PgLease.DebPackage(15)+"_*_all.deb"))
			if len(debs) != 1 {
				t.Fatalf("dpkg-buildpackage wrote %v", debs)
			}
			// clean restores the tree dpkg-source unpacked
			clean := exec.Command("debian/rules", "clean")
			clean.Dir, clean.Env = tree, cleanEnv()
			if out, err := clean.CombinedOutput(); err != nil {
				t.Fatalf("debian/rules clean: %v\n%s", err, out)
			}
			if out, err := exec.Command("diff", "-r", pristine, tree).CombinedOutput(); err != nil {
				t.Fatalf("debian/rules clean left the tree changed:\n%s", out)
			}
			// autopkgtest's @ is every binary package of debian/control:
			// the one this host built, as a packager testing it says
			update := exec.Command("pg_buildext", "updatecontrol")
			update.Dir, update.Env = tree, append(cleanEnv(), "PG_SUPPORTED_VERSIONS=15")
			if out, err := update.CombinedOutput(); err != nil {
				t.Fatalf("pg_buildext updatecontrol: %v\n%s", err, out)
			}
			if err := os.WriteFile(filepath.Join(tree, "debian", "files"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			code, log := autopkgtest(t, dir, tree, debs[0], image)
			switch {
			case code != 0:
				t.Fatalf("autopkgtest exited %d:\n%s", code, tailOf(log))
			default:
				for _, want := range passed {
					if !strings.Contains(log, want) {
						t.Fatalf("autopkgtest's log lacks %q\n%s", want, tailOf(log))
					}
				}
				if !regexp.MustCompile(`installcheck\s+PASS`).MatchString(log) {
					t.Fatalf("autopkgtest's summary lacks installcheck PASS:\n%s", tailOf(log))
				}
			}
		})
	}
}

// TestAutopkgtest runs Debian's autopkgtest on the package of each major
// that -deb.autopkgtest names, in that major's local Debian image (where
// Debian ships the major: its own server package from the image's
// repository), as a packager tests the build for that release: the
// source tree with debian/control for that major (pg_buildext
// updatecontrol), the deb that pglease-gen builds (TestBuildersAgree shows
// it is dpkg-buildpackage's, member for member). make autopkgtest runs it;
// make test runs 15 in TestSourcePackage.
func TestAutopkgtest(t *testing.T) {
	if *testenv.DebAutopkgtest == "" {
		t.Skip("make autopkgtest runs it (-deb.autopkgtest=15,17,18,19)")
	}
	testenv.Tools(t, "pg_buildext", "autopkgtest", "docker")
	testenv.Docker(t)
	eachDebianMajor(t, "-deb.autopkgtest", *testenv.DebAutopkgtest, autopkgtestMajor)
}

// eachDebianMajor runs run on each major of the comma-separated list
// (named by flag) as a subtest, and on the first also with one expected
// output changed (broken), where what run tests must fail.
func eachDebianMajor(t *testing.T, flag, list string, run func(t *testing.T, m int, broken bool)) {
	for i, f := range strings.Split(list, ",") {
		var m int
		if _, err := fmt.Sscan(f, &m); err != nil || !images.DebianShips(m) {
			t.Fatalf("%s: %q is not a major Debian ships (%v)", flag, f, images.DebianMajors())
		}
		t.Run(fmt.Sprint(m), func(t *testing.T) { run(t, m, false) })
		if i == 0 {
			t.Run(fmt.Sprintf("%d-broken-expected-output", m), func(t *testing.T) { run(t, m, true) })
		}
	}
}

// autopkgtestMajor runs autopkgtest on major m's package, with one
// expected output changed when broken (then it must fail in its test).
func autopkgtestMajor(t *testing.T, m int, broken bool) {
	dir := t.TempDir()
	tree := unpackSource(t, dir)
	update := exec.Command("pg_buildext", "updatecontrol")
	update.Dir, update.Env = tree, append(cleanEnv(), fmt.Sprintf("PG_SUPPORTED_VERSIONS=%d", m))
	if out, err := update.CombinedOutput(); err != nil {
		t.Fatalf("pg_buildext updatecontrol: %v\n%s", err, out)
	}
	// a built tree: its binaries are given (autopkgtest reads debian/files)
	if err := os.WriteFile(filepath.Join(tree, "debian", "files"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ours := ourDebs(t, m)[m]
	debPath := filepath.Join(dir, ours.name)
	if err := os.WriteFile(debPath, ours.body, 0o644); err != nil {
		t.Fatal(err)
	}
	if broken {
		breakExpected(t, tree)
	}
	code, log := autopkgtest(t, dir, tree, debPath, images.Ref(images.DebianRepository, m, "amd64"))
	if broken {
		if code == 0 || !regexp.MustCompile(`installcheck\s+FAIL non-zero exit status`).MatchString(log) {
			t.Fatalf("autopkgtest with a wrong expected output exited %d:\n%s", code, tailOf(log))
		}
		t.Logf("PostgreSQL %d, a wrong expected output: autopkgtest installcheck FAIL, as it must", m)
		return
	}
	if code != 0 || !regexp.MustCompile(`installcheck\s+PASS`).MatchString(log) || !strings.Contains(log, fmt.Sprintf("### End %d installcheck ###", m)) {
		t.Fatalf("autopkgtest on %d exited %d:\n%s", m, code, tailOf(log))
	}
	t.Logf("PostgreSQL %d: autopkgtest installcheck PASS", m)
}

// TestSourcePackageInImages is TestSourcePackage on the other Debian
// releases: for each major -deb.build names, a plain `dpkg-buildpackage
// -b -us -uc` of the unpacked tarball in that major's build image
// (images.DebianBuildRepository: the release Debian ships it in, the
// Build-Depends installed, network none) builds the package of every major
// the image supports and runs both suites at build time, and the deb of
// that major is ours (pglease-gen's own builder), member for member. On
// the first major the same tree with one expected output changed must fail
// the build. make deb-build runs it; make test runs TestSourcePackage (15,
// this host) only.
func TestSourcePackageInImages(t *testing.T) {
	if *testenv.DebBuild == "" {
		t.Skip("make deb-build runs it (-deb.build=17,18,19)")
	}
	testenv.Tools(t, "docker")
	testenv.Docker(t)
	if os.Geteuid() != 0 {
		// the build runs as root in the container, in a directory of the
		// test's: only root can remove what it leaves there
		t.Skip("run as root: the build in the image writes root's files into the test's directory")
	}
	eachDebianMajor(t, "-deb.build", *testenv.DebBuild, buildInImage)
}

// buildInImage runs dpkg-buildpackage -b -us -uc on the tarball's tree in
// major m's build image, with one expected output changed when broken.
func buildInImage(t *testing.T, m int, broken bool) {
	dir := t.TempDir()
	tree := unpackSource(t, dir)
	if broken {
		breakExpected(t, tree)
	}
	image := images.Ref(images.DebianBuildRepository, m, "")
	// the tree is bind-mounted; the packages land beside it, in dir
	cmd := exec.Command("docker", "run", "--rm", "--network", "none", "-v", dir+":/build",
		"-w", "/build/"+filepath.Base(tree), image, "dpkg-buildpackage", "-b", "-us", "-uc")
	out, err := cmd.CombinedOutput()
	log := string(out)
	if strings.Contains(log, "Unable to find image") || strings.Contains(log, "No such image") {
		t.Fatalf("%s is missing: pglease-gen images --pg %d --deb-build builds it\n%s", image, m, tailOf(log))
	}
	if broken {
		if err == nil || !strings.Contains(log, fmt.Sprintf("### End %d installcheck (FAILED", m)) {
			t.Fatalf("dpkg-buildpackage in %s passed with a wrong expected output (err %v):\n%s", image, err, tailOf(log))
		}
		t.Logf("%s, a wrong expected output: the build fails in its installcheck, as it must", image)
		return
	}
	if err != nil {
		t.Fatalf("dpkg-buildpackage -b -us -uc in %s: %v\n%s", image, err, tailOf(log))
	}
	var majors []int
	for _, b := range regexp.MustCompile(`### End (\d+) installcheck ###`).FindAllStringSubmatch(log, -1) {
		var n int
		fmt.Sscan(b[1], &n)
		majors = append(majors, n)
	}
	if !slices.Contains(majors, m) {
		t.Fatalf("dpkg-buildpackage in %s ran installcheck on %v, not on %d\n%s", image, majors, m, tailOf(log))
	}
	tests, err := suite.AllTests(pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	// each suite of each major says it passed (the two lines are one when
	// the suites have as many tests)
	want := map[string]int{}
	for _, s := range []suite.Kind{suite.Regress, suite.Isolation} {
		want[fmt.Sprintf("All %d tests passed", len(tests[s]))] += len(majors)
	}
	for line, n := range want {
		if got := strings.Count(log, line); got < n {
			t.Fatalf("dpkg-buildpackage's log in %s has %q %d times, for %d suite runs: the build-time tests did not all run\n%s", image, line, got, n, tailOf(log))
		}
	}
	// the deb of every major it built is ours
	for _, ours := range ourDebs(t, majors...) {
		theirs, err := os.ReadFile(filepath.Join(dir, ours.name))
		if err != nil {
			t.Fatalf("dpkg-buildpackage in %s did not write %s (ours): %v", image, ours.name, err)
		}
		deb.SameDeb(t, ours.body, theirs)
	}
	if !t.Failed() {
		var tail []string
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, "installcheck") || strings.Contains(l, "tests passed") || strings.Contains(l, "building package") {
				tail = append(tail, "  "+strings.TrimSpace(l))
			}
		}
		t.Logf("%s: dpkg-buildpackage ran both suites on %v and wrote their debs, member for member ours; its log says:\n%s", image, majors, strings.Join(tail, "\n"))
	}
}

// aDeb is one built deb: its file name and its bytes.
type aDeb struct {
	name string
	body []byte
}

// ourDebs are the debs pglease-gen's own builder makes of the majors, by
// major; a major it makes none of fails t.
func ourDebs(t *testing.T, majors ...int) map[int]aDeb {
	t.Helper()
	files, _, err := deb.Build(context.Background(), deb.Options{Ext: model.PgLease, Pkg: model.Packages, Src: pglease.Files,
		Majors: majors, Suffix: model.Packages.Suffixes[0], Builder: deb.PureGo, Time: model.Packages.Released()})
	if err != nil {
		t.Fatal(err)
	}
	debs := map[int]aDeb{}
	for _, m := range majors {
		for _, name := range files.Names() {
			if base := filepath.Base(name); strings.HasPrefix(base, model.PgLease.DebPackage(m)+"_") && strings.HasSuffix(base, ".deb") {
				debs[m] = aDeb{base, files[name]}
			}
		}
		if _, ok := debs[m]; !ok {
			t.Fatalf("pglease-gen's builder wrote no %s", model.PgLease.DebPackage(m))
		}
	}
	return debs
}

// sourcePackage is the source package pglease-gen's build makes for
// Debian 12 (the default packaging), signed with signer when given.
func sourcePackage(t *testing.T, signer *sign.Signer) deb.Source {
	t.Helper()
	bookworm, _ := model.DistroNamed("bookworm")
	d, err := sourcetree.NewData(model.PgLease, model.Packages.For(bookworm), pglease.Files, model.Packages.Suffixes[0])
	if err != nil {
		t.Fatal(err)
	}
	debian, err := sourcetree.Debian(d, pglease.Files, bookworm.MajorsOf(model.PgLease.Majors))
	if err != nil {
		t.Fatal(err)
	}
	orig, err := sourcetree.UpstreamTarball(model.PgLease, pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	src, err := deb.MakeSource(model.PgLease.DebSource(), model.PgLease.Version(), orig, debian, model.Packages.Released(), signer)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// aptGetSource serves the signed repository pglease-gen builds for Debian
// 12 from dir (file://), and runs `apt-get update` and `apt-get source
// pg-lease` against it alone (apt's lists, cache and sources in dir): apt
// checks InRelease with the key the .sources file embeds, the Sources
// index, then the files against it, and dpkg-source -x unpacks them. It
// returns the tree.
func aptGetSource(t *testing.T, dir string) string {
	t.Helper()
	signer := testenv.Signer(t, 0)
	bookworm, _ := model.DistroNamed("bookworm")
	files, _, err := deb.Build(context.Background(), deb.Options{Ext: model.PgLease, Pkg: model.Packages, Src: pglease.Files,
		Majors: model.PgLease.Majors, Distros: []model.Distro{bookworm}, Suffix: model.Packages.Suffixes[0], Builder: deb.PureGo,
		Time: model.Packages.Released(), Sign: signer})
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "repo")
	if err := render.Write(repo, files); err != nil {
		t.Fatal(err)
	}
	apt := filepath.Join(dir, "apt")
	for _, d := range []string{"sources.list.d", "lists/partial", "cache/archives/partial", "src"} {
		if err := os.MkdirAll(filepath.Join(apt, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sources := deb.Sources(model.Packages.For(bookworm), model.PgLease.DebSource(), "file://"+filepath.Join(repo, deb.RepoDir), signer.PublicKey())
	if err := os.WriteFile(filepath.Join(apt, "sources.list.d", model.PgLease.SourcesFile()), sources, 0o644); err != nil {
		t.Fatal(err)
	}
	opts := []string{"-q", "-o", "Dir::Etc::SourceList=/dev/null", "-o", "Dir::Etc::SourceParts=" + filepath.Join(apt, "sources.list.d"),
		"-o", "Dir::State::Lists=" + filepath.Join(apt, "lists"), "-o", "Dir::Cache=" + filepath.Join(apt, "cache"),
		"-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache=", "-o", "APT::Sandbox::User=root"}
	for _, args := range [][]string{{"update"}, {"source", model.PgLease.DebSource()}} {
		cmd := exec.Command("apt-get", append(opts, args...)...)
		cmd.Dir, cmd.Env = filepath.Join(apt, "src"), cleanEnv()
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "W: ") && args[0] == "update" {
			t.Fatalf("apt-get %s: %v\n%s", args[0], err, out)
		}
		t.Logf("apt-get %s:\n%s", args[0], strings.TrimSpace(string(out)))
	}
	tree := filepath.Join(apt, "src", model.PgLease.DebSource()+"-"+model.PgLease.Version())
	if _, err := os.Stat(filepath.Join(tree, "debian", "control")); err != nil {
		t.Fatalf("apt-get source unpacked no tree at %s: %v", tree, err)
	}
	return tree
}

// unpackSource writes the source package (.dsc, orig and debian tarballs)
// into dir and unpacks it there with dpkg-source -x, as a Debian packager
// does, returning the tree.
func unpackSource(t *testing.T, dir string) string {
	t.Helper()
	src := sourcePackage(t, nil)
	for name, b := range src.Files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tree := filepath.Join(dir, model.PgLease.SourceDir())
	cmd := exec.Command("dpkg-source", "-x", src.DscName(), tree)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dpkg-source -x %s: %v\n%s", src.DscName(), err, out)
	}
	return tree
}

// breakExpected changes one line of the first regress test's expected
// output.
func breakExpected(t *testing.T, tree string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(tree, "regress", "expected", "*.out"))
	if len(files) == 0 {
		t.Fatal("no regress/expected/*.out in the tree")
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[0], append(b, []byte("a line no test prints\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// autopkgtest runs Debian's autopkgtest on a built tree and its deb in a
// container of image, its temporary files under dir; it returns the exit
// code (0 pass, 4 a test failed) and the log.
func autopkgtest(t *testing.T, dir, tree, deb, image string) (int, string) {
	t.Helper()
	cmd := exec.Command("autopkgtest", "--setup-commands=apt-get -q update", "--output-dir="+filepath.Join(dir, "autopkgtest"),
		tree, deb, "--", "docker", image)
	cmd.Env = append(cleanEnv(), "TMPDIR="+dir)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("autopkgtest: %v", err)
	}
	return code, string(out)
}

// cleanEnv is this process's environment without what would change how
// a Debian build runs (a caller's build options or supported versions).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "DEB_BUILD_OPTIONS", "DEB_BUILD_PROFILES", "PG_SUPPORTED_VERSIONS", "TMPDIR":
			continue
		}
		env = append(env, kv)
	}
	return env
}

func tailOf(s string) string {
	if len(s) > 6000 {
		return "...\n" + s[len(s)-6000:]
	}
	return s
}

// TestSourceMatchesDpkgSource builds the same source package with Debian's
// own tool: upstream's tarball as the orig, our debian/ unpacked into its
// tree, `dpkg-source -b` (SOURCE_DATE_EPOCH the build's). Its .dsc has
// our fields, line for line, and the same orig checksums; its
// debian.tar.xz holds our tar byte for byte (the xz streams differ:
// liblzma's against Go's). lintian on our .dsc reports no warning or
// error.
func TestSourceMatchesDpkgSource(t *testing.T) {
	testenv.Tools(t, "dpkg-source", "lintian", "xz")
	src := sourcePackage(t, nil)
	dir := t.TempDir()
	for name, b := range src.Files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	native := filepath.Join(dir, "native")
	tree := filepath.Join(native, model.PgLease.SourceDir())
	origName := deb.OrigName(model.PgLease.DebSource(), model.PgLease.Version())
	debTar := src.Name + "_" + src.Version + ".debian.tar.xz"
	steps := [][]string{
		{"mkdir", "-p", tree},
		{"cp", filepath.Join(dir, origName), native},
		{"tar", "-xzf", filepath.Join(dir, origName), "-C", native},
		{"tar", "-xJf", filepath.Join(dir, debTar), "-C", tree},
	}
	for _, argv := range steps {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
		}
	}
	cmd := exec.Command("dpkg-source", "-b", ".")
	cmd.Dir, cmd.Env = tree, append(cleanEnv(), fmt.Sprintf("SOURCE_DATE_EPOCH=%d", model.Packages.Released().Unix()))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dpkg-source -b: %v\n%s", err, out)
	}
	theirs, err := os.ReadFile(filepath.Join(native, src.DscName()))
	if err != nil {
		t.Fatal(err)
	}
	fields := func(dsc string) (head string, orig []string) {
		head, _, _ = strings.Cut(dsc, "Checksums-Sha1:")
		for _, l := range strings.Split(dsc, "\n") {
			if strings.HasSuffix(l, " "+origName) {
				orig = append(orig, l)
			}
		}
		return head, orig
	}
	oh, oo := fields(string(src.Dsc))
	th, to := fields(string(theirs))
	if oh != th {
		t.Errorf(".dsc fields differ from dpkg-source's:\nours:\n%s\ndpkg-source:\n%s", oh, th)
	}
	if fmt.Sprint(oo) != fmt.Sprint(to) || len(oo) != 3 {
		t.Errorf("orig checksums: ours %q, dpkg-source's %q", oo, to)
	}
	unxz := func(f string) []byte {
		out, err := exec.Command("xz", "-dc", f).Output()
		if err != nil {
			t.Fatalf("xz -dc %s: %v", f, err)
		}
		return out
	}
	if a, b := unxz(filepath.Join(dir, debTar)), unxz(filepath.Join(native, debTar)); !bytes.Equal(a, b) {
		t.Errorf("the debian tarballs' tars differ: ours %d bytes, dpkg-source's %d", len(a), len(b))
	}
	out, err := exec.Command("lintian", "--tag-display-limit", "0", filepath.Join(dir, src.DscName())).CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "W: ") || strings.HasPrefix(l, "E: ") {
			t.Errorf("lintian: %s", l)
		}
	}
	if err != nil {
		t.Errorf("lintian %s: %v\n%s", src.DscName(), err, out)
	}
}
