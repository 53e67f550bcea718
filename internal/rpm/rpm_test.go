package rpm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rpmutils "github.com/sassoftware/go-rpmutils"

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
		Suffix: "PGSTY", Builder: builder, Time: when}
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

// TestSpecGolden compares the rendered spec, which is the same on every
// build host, with its golden copy.
func TestSpecGolden(t *testing.T) {
	files := build(t, options(PureGo, model.Packages.Released(), 17))
	got := files[SpecFile(model.PgLease)]
	golden := filepath.Join("testdata", "golden", SpecFile(model.PgLease))
	if *testenv.Update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./internal/rpm -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the rendered spec differs from %s (go test ./internal/rpm -update, then review the diff)", golden)
	}
}

// TestSpecParses has rpm itself parse the spec for every major, with the
// build host's defines.
func TestSpecParses(t *testing.T) {
	testenv.Tools(t, "rpmspec")
	spec := writeSpec(t, build(t, options(PureGo, model.Packages.Released(), 17)))
	for _, major := range model.PgLease.Majors {
		args := []string{"--parse"}
		for _, d := range RpmbuildDefines(model.Packages, major) {
			args = append(args, "--define", d)
		}
		out, err := exec.Command("rpmspec", append(args, spec)...).CombinedOutput()
		if err != nil {
			t.Fatalf("rpmspec --parse for %d: %v\n%s", major, err, out)
		}
		if want := fmt.Sprintf("Name:           pg_lease_%d\n", major); !strings.Contains(string(out), want) {
			t.Errorf("rpmspec --parse for %d has no %q:\n%s", major, want, out)
		}
	}
}

func TestSpecGuardsTheMajor(t *testing.T) {
	testenv.Tools(t, "rpmspec")
	spec := writeSpec(t, build(t, options(PureGo, model.Packages.Released(), 17)))
	e := model.PgLease
	for _, tc := range []struct {
		define, want string
	}{
		{"", fmt.Sprintf(`define pgmajorversion (%s), e.g. rpmbuild --define "pgmajorversion %d"`, e.MajorRange(), e.MaxMajor())},
		{fmt.Sprintf("pgmajorversion %d", e.MinMajor()-1), fmt.Sprintf("pg_lease supports PostgreSQL %d to %d, not %d", e.MinMajor(), e.MaxMajor(), e.MinMajor()-1)},
		{fmt.Sprintf("pgmajorversion %d", e.MaxMajor()+1), fmt.Sprintf("pg_lease supports PostgreSQL %d to %d, not %d", e.MinMajor(), e.MaxMajor(), e.MaxMajor()+1)},
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

// TestBuildIsReproducible builds twice with the same inputs, a second
// apart, for each builder and for a SOURCE_DATE_EPOCH in the past and in
// the future, and wants the same bytes, with every payload dated the
// earlier of the epoch and upstream's release (the tarball's date, which
// %install keeps and rpmbuild clamps to the epoch). The tarball is
// upstream's whatever the epoch.
func TestBuildIsReproducible(t *testing.T) {
	upstream := sourcetree.UpstreamTime(model.PgLease)
	for _, b := range []string{PureGo, Rpmbuild} {
		if b == Rpmbuild {
			testenv.Tools(t, "rpmbuild")
		}
		for _, when := range []time.Time{time.Unix(1700000000, 0), time.Now().Add(10 * 365 * 24 * time.Hour).Truncate(time.Second)} {
			a := build(t, options(b, when, 16))
			nextSecond()
			c := build(t, options(b, when, 16))
			if !bytes.Equal(sums(a), sums(c)) {
				t.Errorf("%s, epoch %d: two builds differ:\n%s\n%s", b, when.Unix(), sums(a), sums(c))
			}
			want := min(when.Unix(), upstream.Unix())
			for _, name := range a.Names() {
				if !strings.HasSuffix(name, ".rpm") || strings.HasSuffix(name, ".src.rpm") {
					continue
				}
				for _, m := range members(t, a[name]) {
					if m.mtime != want {
						t.Errorf("%s, epoch %d: %s: payload %s has mtime %d, want %d", b, when.Unix(), name, m.name, m.mtime, want)
					}
				}
			}
		}
	}
	when := time.Unix(1800000000, 0)
	a, c := build(t, options(PureGo, when, 16)), build(t, options(PureGo, when.Add(time.Hour), 16))
	if !bytes.Equal(a[model.PgLease.Tarball()], c[model.PgLease.Tarball()]) {
		t.Error("SOURCE_DATE_EPOCH changes the upstream tarball")
	}
}

// TestConcurrentRpmbuildBuilds runs two identical rpmbuild builds at once:
// both succeed with the same bytes (they share a top directory by name).
func TestConcurrentRpmbuildBuilds(t *testing.T) {
	testenv.Tools(t, "rpmbuild")
	when := time.Unix(1700000000, 0)
	var out [2]render.Files
	var errs [2]error
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], _, errs[i] = Build(context.Background(), options(Rpmbuild, when, 15, 16))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("build %d: %v", i, err)
		}
	}
	if !bytes.Equal(sums(out[0]), sums(out[1])) {
		t.Errorf("two concurrent identical builds differ:\n%s\n%s", sums(out[0]), sums(out[1]))
	}
}

// nextSecond waits until the wall clock's second changes.
func nextSecond() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second).Sub(now) + 10*time.Millisecond)
}

// cpioMember is one payload entry's cpio header.
type cpioMember struct {
	name  string
	mode  int64
	size  int64
	mtime int64
	links int
}

// members lists a package's payload entries in order, as cpio records them.
func members(t *testing.T, b []byte) []cpioMember {
	t.Helper()
	r, err := rpmutils.ReadRpm(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	cr, err := r.PayloadReader()
	if err != nil {
		t.Fatal(err)
	}
	var out []cpioMember
	for {
		h, err := cr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Filename() == "TRAILER!!!" {
			return out
		}
		out = append(out, cpioMember{h.Filename(), int64(h.Mode()), int64(h.Filesize()), int64(h.Mtime()), h.Nlink()})
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

// TestBuildersAgree builds in pure Go and with rpmbuild and compares what
// each package says and holds.
func TestBuildersAgree(t *testing.T) {
	testenv.Tools(t, "rpmbuild")
	when := model.Packages.Released()
	pure, real := build(t, options(PureGo, when)), build(t, options(Rpmbuild, when))
	for _, major := range model.PgLease.Majors {
		name := fmt.Sprintf("el9.x86_64/pg_lease_%d-"+ver+"-1PGSTY.el9.noarch.rpm", major)
		if pure[name] == nil || real[name] == nil {
			t.Fatalf("%s missing: pure Go %v, rpmbuild %v", name, pure[name] != nil, real[name] != nil)
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
		}
		if fmt.Sprintf("%+v", a) != fmt.Sprintf("%+v", b) {
			t.Errorf("PostgreSQL %d: the builders disagree\npure Go:  %+v\nrpmbuild: %+v", major, a, b)
		}
		pa, pb := payload(t, pure[name]), payload(t, real[name])
		// every script, the control file, README and LICENSE
		if len(pa) != len(model.PgLease.Scripts())+3 || fmt.Sprint(pa) != fmt.Sprint(pb) {
			t.Errorf("PostgreSQL %d: payloads differ: pure Go %d files, rpmbuild %d files", major, len(pa), len(pb))
		}
		// the payload's member names and cpio headers, e.g. ./usr/...
		ma, mb := members(t, pure[name]), members(t, real[name])
		if fmt.Sprintf("%+v", ma) != fmt.Sprintf("%+v", mb) {
			t.Errorf("PostgreSQL %d: payload members differ\npure Go:  %+v\nrpmbuild: %+v", major, ma, mb)
		}
	}
}

// TestSourceRPMRebuilds hands the pure Go source RPM to rpmbuild --rebuild,
// as a build host would, and compares the result with the pure Go package.
func TestSourceRPMRebuilds(t *testing.T) {
	testenv.Tools(t, "rpm", "rpmbuild")
	when := model.Packages.Released()
	files := build(t, options(PureGo, when, 18))
	top := t.TempDir()
	srpm := filepath.Join(top, "pg_lease_18-"+ver+"-1PGSTY.el9.src.rpm")
	os.WriteFile(srpm, files["SRPMS/pg_lease_18-"+ver+"-1PGSTY.el9.src.rpm"], 0o644)
	if out, err := exec.Command("rpm", "-K", srpm).CombinedOutput(); err != nil || !strings.Contains(string(out), "digests OK") {
		t.Fatalf("rpm -K on the source RPM: %v\n%s", err, out)
	}
	args := []string{"--rebuild", "--quiet", "--define", "_topdir " + top}
	for _, d := range RpmbuildDefines(model.Packages, 18) {
		args = append(args, "--define", d)
	}
	cmd := exec.Command("rpmbuild", append(args, srpm)...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("SOURCE_DATE_EPOCH=%d", when.Unix()), "TZ=UTC")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rpmbuild --rebuild: %v\n%s", err, out)
	}
	rebuilt, err := os.ReadFile(filepath.Join(top, "RPMS", "noarch", "pg_lease_18-"+ver+"-1PGSTY.el9.noarch.rpm"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := ReadInfo("pure Go", files["el9.x86_64/pg_lease_18-"+ver+"-1PGSTY.el9.noarch.rpm"])
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadInfo("rebuilt", rebuilt)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a.Files) != fmt.Sprint(b.Files) || fmt.Sprint(a.Requires) != fmt.Sprint(b.Requires) || a.Release != b.Release {
		t.Errorf("rebuilt from the source RPM:\n%+v\nwant\n%+v", b, a)
	}
}

// TestRpmlint lints every package and the spec (with each major defined,
// as a build host would) with the waivers in rpm/rpmlint.toml; each source
// RPM on its own (rpmlint keeps the last spec name across packages).
func TestRpmlint(t *testing.T) {
	testenv.Tools(t, "rpmlint")
	files := build(t, options(PureGo, model.Packages.Released()))
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
	testenv.Tools(t, "dnf")
	o := options(PureGo, model.Packages.Released())
	o.Distros = model.Distros
	files := build(t, o)
	dir := t.TempDir()
	if err := render.Write(dir, files); err != nil {
		t.Fatal(err)
	}
	for _, d := range model.OfFormat(model.Distros, model.RPM) {
		for _, arch := range model.Packages.Arches {
			repo := filepath.Join(dir, RepoDir(model.Packages.For(d), arch))
			dnf := func(args ...string) ([]byte, error) {
				return exec.Command("dnf", append([]string{"-q", "--installroot", filepath.Join(dir, "root-"+d.Name+"-"+arch), "--releasever", d.Version,
					"--setopt=reposdir=/dev/null", "--repofrompath", "t,file://" + repo, "--repo", "t", "repoquery"}, args...)...).CombinedOutput()
			}
			out, err := dnf("--qf", "%{name} %{evr} %{arch} %{sourcerpm}", "--requires", "pg_lease_17")
			if err != nil || strings.TrimSpace(string(out)) != "postgresql17-server" {
				t.Errorf("%s %s: dnf repoquery --requires pg_lease_17: %v\n%s", d.Name, arch, err, out)
			}
			out, err = dnf("--qf", "%{name}-%{evr}.%{arch}", "pg_lease_*")
			var nvras []string
			for _, m := range d.MajorsOf(model.PgLease.Majors) {
				nvras = append(nvras, fmt.Sprintf("pg_lease_%d-%s-1PGSTY%s.noarch", m, model.PgLease.Version(), d.DistTag()))
			}
			want := strings.Join(nvras, "\n")
			if err != nil || strings.TrimSpace(string(out)) != want {
				t.Errorf("%s %s: dnf sees:\n%s\nwant\n%s", d.Name, arch, out, want)
			}
		}
	}
}

// TestPackagesSuitEveryEL asks Debian's rpm (4.18) what each EL release's
// packages are made of, against what the oldest rpm among EL8's 4.14,
// EL9's 4.16 and EL10's 4.19 reads and the newest accepts: a gzip payload
// (all three read gzip, xz and zstd; gzip keeps the pure Go writer's
// payload byte-comparable), SHA-256 file and payload digests (4.14 was the
// first to write and check the payload digest), both header digests
// (SHA-1 for 4.14, SHA-256, which 4.19 requires), and an RSA/SHA-256 v4
// signature (EL9 and EL10 refuse SHA-1 signatures; 4.19 has no v6
// signatures yet, so v4 is the only kind all three verify).
func TestPackagesSuitEveryEL(t *testing.T) {
	testenv.Tools(t, "rpm")
	o := options(PureGo, model.Packages.Released(), 17)
	o.Distros = model.OfFormat(model.Distros, model.RPM)
	o.Sign = testenv.Signer(t, 2048)
	files := build(t, o)
	dir := t.TempDir()
	if err := render.Write(dir, files); err != nil {
		t.Fatal(err)
	}
	for _, d := range o.Distros {
		name := filepath.Join(dir, RepoDir(model.Packages.For(d), "x86_64"), fmt.Sprintf("pg_lease_17-%s-1PGSTY%s.noarch.rpm", ver, d.DistTag()))
		out, err := exec.Command("rpm", "-qp", "--nosignature", "--qf",
			"%{RELEASE} %{PAYLOADCOMPRESSOR} %{FILEDIGESTALGO} %{PAYLOADDIGESTALGO} %{SHA1HEADER}/%{SHA256HEADER} %{RSAHEADER:pgpsig}", name).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: rpm -qp: %v\n%s", d.Name, err, out)
		}
		f := strings.Fields(string(out))
		if len(f) < 6 || f[0] != "1PGSTY"+d.DistTag() || f[1] != "gzip" || f[2] != "8" || f[3] != "8" ||
			strings.Contains(f[4], "(none)") || len(f[4]) != 40+1+64 || !strings.HasPrefix(f[5], "RSA/SHA256,") {
			t.Errorf("%s: release, payload, file and payload digest algorithms (8 = SHA-256), header digests, signature:\n%s", d.Name, out)
		}
		if out, err := exec.Command("rpm", "-K", "--nosignature", name).CombinedOutput(); err != nil || !strings.Contains(string(out), "digests OK") {
			t.Errorf("%s: rpm -K --nosignature: %v\n%s", d.Name, err, out)
		}
	}
}

// TestPayloadUnpacksHere unpacks each pure Go package the usual way,
// rpm2cpio | cpio -idm, and wants every file under the current directory.
func TestPayloadUnpacksHere(t *testing.T) {
	testenv.Tools(t, "rpm2cpio", "cpio")
	files := build(t, options(PureGo, model.Packages.Released(), 17))
	for _, name := range []string{"el9.x86_64/pg_lease_17-" + ver + "-1PGSTY.el9.noarch.rpm", "SRPMS/pg_lease_17-" + ver + "-1PGSTY.el9.src.rpm"} {
		dir := t.TempDir()
		pkg := filepath.Join(dir, "p.rpm")
		if err := os.WriteFile(pkg, files[name], 0o644); err != nil {
			t.Fatal(err)
		}
		// --no-absolute-filenames would hide the bug; without it an
		// absolute name escapes to the host (and cpio says so)
		cmd := exec.Command("sh", "-c", "rpm2cpio p.rpm | cpio -idm --quiet && find . -type f ! -name p.rpm | sort")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: unpack: %v\n%s", name, err, out)
		}
		var want string
		if strings.HasSuffix(name, ".src.rpm") {
			want = "./pg_lease-" + ver + ".tar.gz\n" + "./pg_lease.spec\n"
		} else {
			// every script the model names, in the order find | sort gives
			var scripts []string
			for _, f := range append(model.PgLease.Scripts(), model.PgLease.ControlFile()) {
				scripts = append(scripts, "./usr/pgsql-17/share/extension/"+f)
			}
			slices.Sort(scripts)
			want = strings.Join(scripts, "\n") + "\n./usr/share/doc/pg_lease_17/README.md\n./usr/share/licenses/pg_lease_17/LICENSE\n"
		}
		if string(out) != want {
			t.Errorf("%s unpacked into its directory:\n%s\nwant\n%s", name, out, want)
		}
	}
}

// sums lists every file with its SHA-256, for comparing two builds.
func sums(files render.Files) []byte {
	var b bytes.Buffer
	for _, n := range files.Names() {
		fmt.Fprintf(&b, "%x  %s\n", sha256.Sum256(files[n]), n)
	}
	return b.Bytes()
}

// TestPackSortsAndRefusesDuplicates hands the writer its files out of
// order, and twice: the header lists them sorted (rpm searches it by
// path), and a path given twice is an error.
func TestPackSortsAndRefusesDuplicates(t *testing.T) {
	p := Package{Name: "x", Version: "1", Release: "1", BuildTime: model.Packages.Released(), Files: []File{
		{Path: "/usr/b", Mode: 0o644, Body: []byte("b")},
		{Path: "/usr/a", Link: "b"},
		{Path: "/usr", Mode: 0o755, Dir: true},
	}}
	b, err := Pack(p)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range members(t, b) {
		names = append(names, m.name)
	}
	if fmt.Sprint(names) != "[./usr ./usr/a ./usr/b]" {
		t.Errorf("payload order %v", names)
	}
	p.Files = append(p.Files, File{Path: "/usr/a", Mode: 0o644, Body: []byte("again")})
	if _, err := Pack(p); err == nil || !strings.Contains(err.Error(), "/usr/a twice") {
		t.Errorf("duplicate path: err = %v", err)
	}
}

// ver is the version the packages are built at.
var ver = model.PgLease.Version()
