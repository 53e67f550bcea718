package rpm

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rpmutils "github.com/sassoftware/go-rpmutils"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func options(builder string, when time.Time, majors ...int) Options {
	if len(majors) == 0 {
		majors = model.PgLease.Majors
	}
	return Options{Ext: model.PgLease, Pkg: model.Packages, Src: pglease.Files, Majors: majors,
		Suffix: "PIGSTY", Builder: builder, Time: when}
}

func build(t *testing.T, o Options) render.Files {
	t.Helper()
	files, _, err := Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// writeSpec writes the rendered spec into a temporary directory.
func writeSpec(t *testing.T, files render.Files) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), SpecFile(model.PgLease))
	if err := os.WriteFile(p, files[SpecFile(model.PgLease)], 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSpecGolden compares, for every major, the spec as rpm itself parses
// it (rpmspec --parse with the build host's defines) with a golden copy.
func TestSpecGolden(t *testing.T) {
	files := build(t, options(Rpmpack, model.Packages.Released(), 17))
	spec := writeSpec(t, files)
	for _, major := range model.PgLease.Majors {
		args := []string{"--parse"}
		for _, d := range RpmbuildDefines(major) {
			args = append(args, "--define", d)
		}
		out, err := exec.Command("rpmspec", append(args, spec)...).CombinedOutput()
		if err != nil {
			t.Fatalf("rpmspec --parse for %d: %v\n%s", major, err, out)
		}
		golden := filepath.Join("testdata", "golden", fmt.Sprintf("pg_lease_%d.spec", major))
		if *update {
			os.WriteFile(golden, out, 0o644)
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (go test ./internal/rpm -update writes it)", err)
		}
		if !bytes.Equal(out, want) {
			t.Errorf("parsed spec for %d differs from %s (go test ./internal/rpm -update, then review the diff)", major, golden)
		}
	}
}

func TestSpecGuardsTheMajor(t *testing.T) {
	spec := writeSpec(t, build(t, options(Rpmpack, model.Packages.Released(), 17)))
	for _, tc := range []struct {
		define, want string
	}{
		{"", `define pgmajorversion (14-18), e.g. rpmbuild --define "pgmajorversion 18"`},
		{"pgmajorversion 13", "pg_lease supports PostgreSQL 14 to 18, not 13"},
		{"pgmajorversion 19", "pg_lease supports PostgreSQL 14 to 18, not 19"},
	} {
		args := []string{"--parse"}
		if tc.define != "" {
			args = append(args, "--define", tc.define)
		}
		out, err := exec.Command("rpmspec", append(args, spec)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("rpmspec with %q: err=%v, output %q; want a failure saying %q", tc.define, err, out, tc.want)
		}
	}
}

func TestBuildIsReproducible(t *testing.T) {
	when := time.Unix(1800000000, 0)
	for _, b := range []string{Rpmpack, Rpmbuild} {
		a, c := build(t, options(b, when, 16)), build(t, options(b, when, 16))
		if !bytes.Equal(a["SHA256SUMS"], c["SHA256SUMS"]) {
			t.Errorf("%s: two builds with the same SOURCE_DATE_EPOCH differ:\n%s\n%s", b, a["SHA256SUMS"], c["SHA256SUMS"])
		}
	}
	a, c := build(t, options(Rpmpack, when, 16)), build(t, options(Rpmpack, when.Add(time.Hour), 16))
	if bytes.Equal(a[model.PgLease.Tarball()], c[model.PgLease.Tarball()]) {
		t.Error("SOURCE_DATE_EPOCH does not reach the tarball")
	}
}

// payload reads a package's files (path -> contents) from its payload.
func payload(t *testing.T, b []byte) map[string]string {
	t.Helper()
	r, err := rpmutils.ReadRpm(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	pr, err := r.PayloadReaderExtended()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for {
		fi, err := pr.Next()
		if err != nil {
			break
		}
		if pr.IsLink() || fi.Mode()&0o170000 == 0o40000 {
			continue
		}
		var buf bytes.Buffer
		buf.ReadFrom(pr)
		out[fi.Name()] = buf.String()
	}
	return out
}

// TestBuildersAgree builds with rpmpack and with rpmbuild and compares what
// each package says and holds.
func TestBuildersAgree(t *testing.T) {
	when := model.Packages.Released()
	pure, real := build(t, options(Rpmpack, when)), build(t, options(Rpmbuild, when))
	for _, major := range model.PgLease.Majors {
		name := fmt.Sprintf("el9.x86_64/pg_lease_%d-0.1.0-1PIGSTY.el9.noarch.rpm", major)
		if pure[name] == nil || real[name] == nil {
			t.Fatalf("%s missing: rpmpack %v, rpmbuild %v", name, pure[name] != nil, real[name] != nil)
		}
		a, err := ReadInfo(name, pure[name])
		if err != nil {
			t.Fatal(err)
		}
		b, err := ReadInfo(name, real[name])
		if err != nil {
			t.Fatal(err)
		}
		// what differs by nature: the bytes, and where the header ends
		for _, in := range []*Info{&a, &b} {
			in.SHA256, in.Size, in.HeaderStart, in.HeaderEnd, in.Archive = "", 0, 0, 0, 0
			dirSizes(in)
		}
		if fmt.Sprintf("%+v", a) != fmt.Sprintf("%+v", b) {
			t.Errorf("PostgreSQL %d: the builders disagree\nrpmpack:  %+v\nrpmbuild: %+v", major, a, b)
		}
		pa, pb := payload(t, pure[name]), payload(t, real[name])
		if len(pa) != 4 || fmt.Sprint(pa) != fmt.Sprint(pb) {
			t.Errorf("PostgreSQL %d: payloads differ: rpmpack %d files, rpmbuild %d files", major, len(pa), len(pb))
		}
	}
}

// dirSizes clears the sizes of directories, which record the build
// machine's file system (rpmpack writes 4096, rpmbuild what stat says).
func dirSizes(in *Info) {
	for i := range in.Files {
		if in.Files[i].Dir {
			in.Files[i].Size = 0
		}
	}
}

// TestSourceRPMRebuilds hands the pure Go source RPM to rpmbuild --rebuild,
// as a build host would, and compares the result with the pure Go package.
func TestSourceRPMRebuilds(t *testing.T) {
	when := model.Packages.Released()
	files := build(t, options(Rpmpack, when, 18))
	top := t.TempDir()
	srpm := filepath.Join(top, "pg_lease_18-0.1.0-1PIGSTY.el9.src.rpm")
	os.WriteFile(srpm, files["SRPMS/pg_lease_18-0.1.0-1PIGSTY.el9.src.rpm"], 0o644)
	if out, err := exec.Command("rpm", "-K", srpm).CombinedOutput(); err != nil || !strings.Contains(string(out), "digests OK") {
		t.Fatalf("rpm -K on the source RPM: %v\n%s", err, out)
	}
	args := []string{"--rebuild", "--quiet", "--define", "_topdir " + top}
	for _, d := range RpmbuildDefines(18) {
		args = append(args, "--define", d)
	}
	cmd := exec.Command("rpmbuild", append(args, srpm)...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("SOURCE_DATE_EPOCH=%d", when.Unix()), "TZ=UTC")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rpmbuild --rebuild: %v\n%s", err, out)
	}
	rebuilt, err := os.ReadFile(filepath.Join(top, "RPMS", "noarch", "pg_lease_18-0.1.0-1PIGSTY.el9.noarch.rpm"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := ReadInfo("a", files["el9.x86_64/pg_lease_18-0.1.0-1PIGSTY.el9.noarch.rpm"])
	b, _ := ReadInfo("a", rebuilt)
	dirSizes(&a)
	dirSizes(&b)
	if fmt.Sprint(a.Files) != fmt.Sprint(b.Files) || fmt.Sprint(a.Requires) != fmt.Sprint(b.Requires) || a.Release != b.Release {
		t.Errorf("rebuilt from the source RPM:\n%+v\nwant\n%+v", b, a)
	}
}

// TestRpmlint lints every package and the spec (with each major defined,
// as a build host would) with the waivers in rpm/rpmlint.toml; each source
// RPM on its own (rpmlint keeps the last spec name across packages).
func TestRpmlint(t *testing.T) {
	files := build(t, options(Rpmpack, model.Packages.Released()))
	dir := t.TempDir()
	if err := render.Write(dir, files); err != nil {
		t.Fatal(err)
	}
	var targets [][]string
	var bins []string
	for _, n := range files.Names() {
		switch {
		case strings.HasPrefix(n, "el9.x86_64/") && strings.HasSuffix(n, ".rpm"):
			bins = append(bins, filepath.Join(dir, n))
		case strings.HasSuffix(n, ".src.rpm"):
			targets = append(targets, []string{filepath.Join(dir, n)})
		}
	}
	targets = append(targets, bins)
	for _, major := range model.PgLease.Majors {
		p := filepath.Join(dir, fmt.Sprintf("pg_lease_%d.spec", major))
		os.WriteFile(p, append([]byte(fmt.Sprintf("%%global pgmajorversion %d\n", major)), files[SpecFile(model.PgLease)]...), 0o644)
		targets = append(targets, []string{p})
	}
	config, _ := filepath.Abs("../../rpm/rpmlint.toml")
	for _, tg := range targets {
		out, err := exec.Command("rpmlint", append([]string{"--config", config}, tg...)...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), " 0 errors, 0 warnings") {
			t.Errorf("rpmlint %v: %v\n%s", tg, err, out)
		}
	}
}

// TestDNFReadsTheRepository asks Debian's dnf, against a scratch root,
// what the generated repository offers.
func TestDNFReadsTheRepository(t *testing.T) {
	files := build(t, options(Rpmpack, model.Packages.Released()))
	dir := t.TempDir()
	if err := render.Write(dir, files); err != nil {
		t.Fatal(err)
	}
	for _, arch := range model.Packages.Arches {
		repo := filepath.Join(dir, RepoDir(model.Packages, arch))
		out, err := exec.Command("dnf", "-q", "--installroot", filepath.Join(dir, "root-"+arch), "--releasever", "9",
			"--setopt=reposdir=/dev/null", "--repofrompath", "t,file://"+repo, "--repo", "t",
			"repoquery", "--qf", "%{name} %{evr} %{arch} %{sourcerpm}", "--requires", "pg_lease_17").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "postgresql17-server" {
			t.Errorf("%s: dnf repoquery --requires pg_lease_17: %v\n%s", arch, err, out)
		}
		out, err = exec.Command("dnf", "-q", "--installroot", filepath.Join(dir, "root-"+arch), "--releasever", "9",
			"--setopt=reposdir=/dev/null", "--repofrompath", "t,file://"+repo, "--repo", "t",
			"repoquery", "--qf", "%{name}-%{evr}.%{arch}", "pg_lease_*").CombinedOutput()
		want := "pg_lease_14-0.1.0-1PIGSTY.el9.noarch\npg_lease_15-0.1.0-1PIGSTY.el9.noarch\npg_lease_16-0.1.0-1PIGSTY.el9.noarch\npg_lease_17-0.1.0-1PIGSTY.el9.noarch\npg_lease_18-0.1.0-1PIGSTY.el9.noarch"
		if err != nil || strings.TrimSpace(string(out)) != want {
			t.Errorf("%s: dnf sees:\n%s\nwant\n%s", arch, out, want)
		}
	}
}

func TestPublishRefusesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "notes.txt")
	os.WriteFile(mine, []byte("mine"), 0o644)
	err := Publish(dir, render.Files{"a": []byte("b")})
	if err == nil || !strings.Contains(err.Error(), "was not written by pglease-gen build") {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(mine); string(b) != "mine" {
		t.Error("Publish touched a directory it refused")
	}
	out := filepath.Join(dir, "dist")
	if err := Publish(out, render.Files{"x": []byte("1")}); err != nil {
		t.Fatal(err)
	}
	if err := Publish(out, render.Files{"y": []byte("2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "x")); err == nil {
		t.Error("a second Publish kept a file of the first")
	}
	if b, _ := os.ReadFile(filepath.Join(out, "y")); string(b) != "2" {
		t.Error("second Publish did not write y")
	}
}
