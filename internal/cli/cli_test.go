package cli

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/deb"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/rpm"
	"github.com/pglease/pglease-gen/internal/runner"
	"github.com/pglease/pglease-gen/internal/sign"
	"github.com/pglease/pglease-gen/internal/suite"
	"github.com/pglease/pglease-gen/internal/testenv"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestRenderWritesWhatRenderReturns(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := run(t, "render", "--out", dir)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want, err := render.Extension(model.PgLease, pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range want.Names() {
		got, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil || !bytes.Equal(got, want[n]) {
			t.Errorf("%s: not what render returns (%v)", n, err)
		}
		if !strings.Contains(out, n) {
			t.Errorf("output does not name %s:\n%s", n, out)
		}
	}
	if code, _, errs := run(t, "render", "--out", dir, "--check"); code != ExitOK {
		t.Errorf("--check on fresh output: exit %d: %s", code, errs)
	}
}

func TestRenderCheckFindsStaleFile(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := run(t, "render", "--out", dir); code != ExitOK {
		t.Fatal(errs)
	}
	script := filepath.Join(dir, model.PgLease.ScriptFile())
	if err := os.WriteFile(script, []byte("-- edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	control := filepath.Join(dir, model.PgLease.ControlFile())
	if err := os.Remove(control); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "render", "--out", dir, "--check")
	if code != ExitFailure || !strings.Contains(errs, "differs: "+model.PgLease.ScriptFile()) || !strings.Contains(errs, "missing: "+model.PgLease.ControlFile()) ||
		!strings.Contains(errs, "2 files are not what render writes") {
		t.Errorf("exit %d, stderr %q; want exit 1 naming the changed script and the missing control file", code, errs)
	}
	if b, _ := os.ReadFile(script); string(b) != "-- edited by hand\n" {
		t.Error("--check changed the file")
	}
}

// TestRenderCheckFindsStrayAndRefusesABuild: a script of a version render
// does not write (the model dropped it; PostgreSQL would still offer it)
// fails --check, which said "up to date"; and render refuses to write into
// a build's output, which the next build replaces whole.
func TestRenderCheckFindsStrayAndRefusesABuild(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := run(t, "render", "--out", dir); code != ExitOK {
		t.Fatal(errs)
	}
	os.WriteFile(filepath.Join(dir, model.PgLease.Name+"--0.0.9.sql"), []byte("-- old\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine\n"), 0o644)
	code, _, errs := run(t, "render", "--out", dir, "--check")
	if code != ExitFailure || !strings.Contains(errs, "stray: "+model.PgLease.Name+"--0.0.9.sql") || strings.Contains(errs, "notes.txt") {
		t.Errorf("exit %d, stderr %q; want exit 1 naming the stray script only", code, errs)
	}
	out := filepath.Join(t.TempDir(), "dist")
	if code, _, errs := run(t, "build", "--out", out, "--pg", "17", "--distro", "el9"); code != ExitOK {
		t.Fatal(errs)
	}
	before, _ := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	code, _, errs = run(t, "render", "--out", out)
	if code != ExitUsage || !strings.Contains(errs, "is a build's output") {
		t.Errorf("render into a build's output: exit %d, %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(out, model.PgLease.ControlFile())); err == nil {
		t.Error("render wrote into the build's output")
	}
	if after, _ := os.ReadFile(filepath.Join(out, "SHA256SUMS")); string(after) != string(before) {
		t.Error("the build's output changed")
	}
}

func TestBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"render", "extra-arg"},
		{"render", "--no-such-flag"},
		{"no-such-command"},
		{"test", "--pg", "16", "--versions", "0.1.0"},
		{"test"},
	} {
		code, out, errs := run(t, args...)
		if code != ExitUsage || errs == "" || !strings.HasPrefix(errs, "pglease-gen: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 with an error", args, code, out, errs)
		}
	}
	if _, _, errs := run(t, "test"); !strings.Contains(errs, "--local") {
		t.Errorf("test without a target does not say what to pass: %q", errs)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := run(t, "version")
	if code != ExitOK || !strings.Contains(out, "pg_lease "+model.PgLease.Version()+" for PostgreSQL "+model.PgLease.MajorList()) {
		t.Errorf("exit %d, %q", code, out)
	}
}

// TestTestLocal runs the newest version's suites and the update check
// in-process against a throwaway server from the local PostgreSQL (make
// test installs it). Every version's passes run locally in the runner's
// tests and in Docker in make matrix, through the same code.
func TestTestLocal(t *testing.T) {
	testenv.Server(t)
	results := t.TempDir()
	code, out, errs := run(t, "test", "--local", "--results", results, "--versions", "newest")
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	n := counts(t)
	for _, want := range []string{fmt.Sprintf("regress:   %d passed, 0 failed", n[suite.Regress]), fmt.Sprintf("isolation: %d passed, 0 failed", n[suite.Isolation]),
		fmt.Sprintf("update:    %d passed, 0 failed", n[suite.Update]), fmt.Sprintf("\nsuites: %d passed, 0 failed\n", n[suite.Regress]+n[suite.Isolation]+n[suite.Update])} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// counts is how many cases of each kind a test run with --versions
// newest has: the newest version's pass of the suites and every update
// check.
func counts(t *testing.T) map[suite.Kind]int {
	t.Helper()
	passes, err := runner.Passes(model.PgLease, pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	return runner.Count(passes[:1], runner.Updates(model.PgLease))
}

func TestTestInDocker(t *testing.T) {
	testenv.Docker(t)
	dir := t.TempDir()
	report := filepath.Join(dir, "junit.xml")
	code, out, errs := run(t, "test", "--pg", "15", "--image", "pglease/postgres", "--results", dir, "--junit", report, "--versions", "newest")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	passes, err := runner.Passes(model.PgLease, pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	n := counts(t)
	for _, want := range []string{fmt.Sprintf("pg15: regress (%d tests)", len(passes[0].Tests[suite.Regress])), "pg15  ok     PostgreSQL 15.", " " + model.ELArch(runtime.GOARCH) + " ",
		"PostgreSQL 15.", " on " + model.ELArch(runtime.GOARCH) + "-", // version()
		"\n1 passed, 0 failed, 0 skipped (PostgreSQL 15)\n", "JUnit report: " + report} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(report); err != nil || !bytes.Contains(b, []byte(fmt.Sprintf(`<testsuite name="pg15.isolation" tests="%d" failures="0"`, n[suite.Isolation]))) {
		t.Errorf("JUnit report: %v\n%s", err, b)
	}
}

func TestTestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"test"}, "say where to test"},
		{[]string{"test", "--pg", "13"}, `unsupported PostgreSQL major "13": use one of ` + model.PgLease.MajorList() + ` or all`},
		{[]string{"test", "--pg", "17", "--local"}, "none of the others can be"},
		{[]string{"test", "--pg", "17", "--jobs", "0"}, "--jobs must be at least 1"},
		{[]string{"test", "--pg", "16,99", "--image", "pglease/postgres"}, "unsupported PostgreSQL major \"99\""},
		{[]string{"test", "--pg", "16", "--arch", "sparc"}, `unknown architecture "sparc": use one of amd64 (x86_64), arm64 (aarch64)`},
		{[]string{"test", "--local", "--arch", "arm64"}, "none of the others can be"},
		{[]string{"images", "--pg", "16", "--arch", "s390x"}, `unknown architecture "s390x"`},
		{[]string{"images", "--pg", "14", "--arch", "aarch64"}, "no server build of PostgreSQL 14 for arm64 here"},
	} {
		code, _, errs := run(t, tc.args...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestNoArm64Build14: the local images cannot have PostgreSQL 14 for
// arm64; with --pg all it is skipped and counted, named it is a usage
// error before anything runs; an image of the user's runs it.
func TestNoArm64Build14(t *testing.T) {
	code, _, errs := run(t, "test", "--pg", "14,16", "--arch", "aarch64", "--image", "pglease/el9")
	if code != ExitUsage || !strings.Contains(errs, "no server build of PostgreSQL 14 for arm64 here") || !strings.Contains(errs, "--image REPO (the tag is 14-arm64)") {
		t.Errorf("--pg 14,16: exit %d, stderr %q; want exit 2 saying why and what to do", code, errs)
	}
}

func TestBuildWritesPackages(t *testing.T) {
	out := filepath.Join(t.TempDir(), "dist")
	code, stdout, errs := run(t, "build", "--out", out, "--json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Builder   string `json:"builder"`
		Epoch     int64  `json:"source_date_epoch"`
		Artifacts []struct {
			Path, Kind, SHA256 string
			Size               int
		} `json:"artifacts"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, stdout)
	}
	kinds := map[string]int{}
	for _, a := range doc.Artifacts {
		kinds[a.Kind]++
		b, err := os.ReadFile(filepath.Join(out, a.Path))
		sum := sha256.Sum256(b)
		if err != nil || len(b) != a.Size || hex.EncodeToString(sum[:]) != a.SHA256 {
			t.Errorf("%s: %v, size %d, listed %d", a.Path, err, len(b), a.Size)
		}
	}
	// every distribution by default, each with its own majors
	images := len(model.CNPG.MajorsOf(model.PgLease.Majors))
	want := map[string]int{"tarball": 1, "pgxn-zip": 1, "spec": 1, "checksums": 1, "oci-layout": images, "docker-archive": 2 * images}
	for _, d := range model.Distros {
		n := len(d.MajorsOf(model.PgLease.Majors))
		if d.Format == model.RPM {
			want["srpm"] += n
			want["rpm"] += 2 * n
			want["repodata"] += 2
		} else {
			want["deb"] += n
			want["apt-release"]++
			want["dsc"]++
			want["debian-tarball"]++
			want["orig-tarball"] = 1 // one file in every release's source package
		}
	}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("artifacts %v, want %v", kinds, want)
	}
	if doc.Builder != "go" || doc.Epoch != model.Packages.Released().Unix() {
		t.Errorf("builder %q, epoch %d", doc.Builder, doc.Epoch)
	}
	if !strings.Contains(errs, fmt.Sprintf("repository el9.aarch64: %d packages", len(model.PgLease.Majors))) ||
		!strings.Contains(errs, "repository el8.aarch64: 5 packages") {
		t.Errorf("progress missing from stderr:\n%s", errs)
	}
}

func TestBuildBadInputChangesNothing(t *testing.T) {
	out := filepath.Join(t.TempDir(), "dist")
	if code, _, errs := run(t, "build", "--out", out); code != ExitOK {
		t.Fatal(errs)
	}
	before, _ := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	keys := t.TempDir()
	t.Setenv(sign.PassphraseEnv, "right")
	if code, _, errs := run(t, "keygen", "--out", filepath.Join(keys, "k.asc"), "--bits", "2048"); code != ExitOK {
		t.Fatal(errs)
	}
	t.Setenv(sign.PassphraseEnv, "wrong")
	for _, tc := range []struct {
		args  []string
		epoch string
		want  string
	}{
		{[]string{"--sign-key", filepath.Join(keys, "k.asc")}, "", "the passphrase in " + sign.PassphraseEnv + " does not unlock it"},
		{[]string{"--sign-key", filepath.Join(keys, "k.asc.pub")}, "", "holds only a public key"},
		{[]string{"--sign-key", filepath.Join(keys, "none.asc")}, "", "no such file"},
		{[]string{"--repo-url", "packages.example.org/pg_lease"}, "", "not http, https or file; give the absolute http(s) or file URL"},
		{[]string{"--repo-url", "https://packages.example.org/pg_lease"}, "", "with signature checks off: sign with --sign-key FILE, or pass --allow-unsigned"},
		{[]string{"--release-suffix", "FE-DORA"}, "", `vendor "FE-DORA": a letter then up to 15 letters or digits`},
		{[]string{"--maintainer", "nobody"}, "", `maintainer "nobody": a name and an address`},
		{[]string{"--release", "2"}, "", "release 2 needs release_date"},
		{[]string{"--config", filepath.Join(keys, "none.yaml")}, "", "--config: open"},
		{[]string{"--pg", "13"}, "", `unsupported PostgreSQL major "13"`},
		{[]string{"--builder", "fpm"}, "", `unknown --builder "fpm"`},
		{[]string{"--builder", "go,rpmbuild"}, "", "go is the pure-Go builder of everything, alone"},
		{[]string{"--builder", "rpmbuild,rpmbuild"}, "", "names rpmbuild twice"},
		{[]string{"--sign-key", filepath.Join(keys, "k.asc"), "--allow-unsigned"}, "", "--allow-unsigned and --sign-key say opposite things"},
		{[]string{"--release", "2.5"}, "", `invalid argument "2.5" for "--release" flag: give a whole number`},
		{[]string{"extra"}, "", `pglease-gen build takes no arguments, only flags (--name value), and got "extra"`},
		{[]string{"--repo-url", "file:///srv/sp x/pub"}, "", `holds " "`},
		{[]string{"--repo-url", "https://packages.example.org/$basearch"}, "", `holds "$"`},
		{[]string{"--repo-url", "https://packages.example.org/a,b"}, "", `holds ","`},
		{[]string{"--repo-url", "https://packages.example.org/$(id)"}, "", `holds "$"`},
		{[]string{"--repo-url", "https://packages.example.org/`id`"}, "", "holds \"`\""},
		{[]string{"--repo-url", `https://packages.example.org/a\b`}, "", `holds "\\"`},
		{[]string{"--repo-url", `https://packages.example.org/"a"`}, "", `holds "\""`},
		{[]string{"--repo-url", "file:relative/pub"}, "", "a relative file URL"},
		{[]string{"--repo-url", "https://packages.example.org:99999/pub"}, "", "port 99999 is not 1 to 65535"},
		{[]string{"--repo-url", "https://user:pw@packages.example.org/pub"}, "", "holds a user name or password"},
		{nil, "yesterday", `SOURCE_DATE_EPOCH="yesterday" is not a number of seconds`},
	} {
		t.Setenv("SOURCE_DATE_EPOCH", tc.epoch)
		code, _, errs := run(t, append([]string{"build", "--out", out}, tc.args...)...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v %q: exit %d, %q; want exit 2 and %q", tc.args, tc.epoch, code, errs, tc.want)
		}
	}
	t.Setenv("SOURCE_DATE_EPOCH", "")
	t.Setenv(sign.PassphraseEnv, "")
	if code, _, errs := run(t, "build", "--out", out, "--sign-key", filepath.Join(keys, "k.asc")); code != ExitUsage || !strings.Contains(errs, "protected by a passphrase") {
		t.Errorf("a protected key without a passphrase: exit %d, %q", code, errs)
	}
	after, _ := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if !bytes.Equal(before, after) {
		t.Error("a refused build changed the output")
	}
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "thesis.tex"), []byte("mine"), 0o644)
	if code, outs, errs := run(t, "build", "--out", foreign); code != ExitUsage || !strings.Contains(errs, "was not written by pglease-gen build") {
		t.Errorf("build into a foreign directory: exit %d, %q", code, errs)
	} else if outs != "" {
		t.Errorf("build into a foreign directory worked before it refused (it must check first):\n%s", outs)
	}
	if b, _ := os.ReadFile(filepath.Join(foreign, "thesis.tex")); string(b) != "mine" {
		t.Error("build touched a foreign directory")
	}
}

// TestBuildWithSettings builds with a packager's settings file and a flag
// over it: every value reaches the packages, and a file with an unknown
// key is refused before anything is written.
func TestBuildWithSettings(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "acme.yaml")
	os.WriteFile(cfg, []byte(`vendor: ACME
maintainer: ACME packaging <packages@acme.example>
homepage: https://acme.example/pg_lease
source_url: https://downloads.acme.example/pg_lease/
image_repository: registry.acme.example/db/pg_lease
release: 2
release_date: 2026-12-05
release_note: Rebuilt with ACME's vendor tag
`), 0o644)
	out := filepath.Join(dir, "dist")
	code, stdout, errs := run(t, "build", "--out", out, "--config", cfg, "--maintainer", "ACME builds <builds@acme.example>",
		"--distro", "el9,bookworm", "--pg", "18", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "packager settings from "+cfg) {
		t.Errorf("the build does not say where its settings come from:\n%s", errs)
	}
	v := model.PgLease.Version()
	for _, f := range []string{"SRPMS/pg_lease_18-" + v + "-2ACME.el9.src.rpm", "el9.x86_64/pg_lease_18-" + v + "-2ACME.el9.noarch.rpm",
		"apt/pool/main/p/pg-lease/postgresql-18-pg-lease_" + v + "-2ACME~bookworm_all.deb"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	spec, _ := os.ReadFile(filepath.Join(out, "pg_lease.spec"))
	for _, want := range []string{"URL:            https://acme.example/pg_lease\n",
		"Source0:        https://downloads.acme.example/pg_lease/%{sname}-%{version}.tar.gz\n",
		"Release:        2ACME%{?dist}\n", "* Sat Dec 05 2026 ACME builds <builds@acme.example> - " + v + "-2ACME\n- Rebuilt with ACME's vendor tag\n"} {
		if !strings.Contains(string(spec), want) {
			t.Errorf("the spec lacks %q:\n%s", want, spec)
		}
	}
	if !strings.Contains(stdout, `"release": 2`) || !strings.Contains(stdout, `"release_suffix": "ACME"`) {
		t.Errorf("--json: %s", stdout)
	}
	archives, _ := filepath.Glob(filepath.Join(out, "cnpg", "*.amd64.docker.tar"))
	if len(archives) != 1 {
		t.Fatalf("image archives %v", archives)
	}
	archive, _ := os.ReadFile(archives[0])
	if !bytes.Contains(archive, []byte(`"registry.acme.example/db/pg_lease:`)) {
		t.Errorf("the image archive's tags do not name the repository")
	}
	os.WriteFile(cfg, []byte("vendor: ACME\nrelese: 2\n"), 0o644)
	fresh := filepath.Join(dir, "fresh")
	if code, outs, errs := run(t, "build", "--out", fresh, "--config", cfg); code != ExitUsage || !strings.Contains(errs, `line 2: unknown key "relese"`) || outs != "" {
		t.Errorf("an unknown key: exit %d, %q, %q", code, errs, outs)
	}
	if _, err := os.Stat(fresh); err == nil {
		t.Error("a refused build wrote its output directory")
	}
}

// TestSignedBuild signs with a key keygen made: the build names the key,
// writes the public key and the host files, and when repeated every file
// is byte-identical but the repositories' signatures (InRelease,
// Release.gpg, repomd.xml.asc, SHA256SUMS.asc), which are made when the
// build runs; keygen never overwrites a key.
func TestSignedBuild(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "k.asc")
	t.Setenv(sign.PassphraseEnv, "")
	if code, out, errs := run(t, "keygen", "--out", key, "--bits", "2048"); code != ExitOK || !strings.Contains(out, "wrote "+key) {
		t.Fatalf("keygen: exit %d\n%s%s", code, out, errs)
	}
	if st, err := os.Stat(key); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("private key mode: %v %v", st.Mode(), err)
	}
	before, _ := os.ReadFile(key)
	if code, _, errs := run(t, "keygen", "--out", key); code != ExitUsage || !strings.Contains(errs, "never overwrites") {
		t.Errorf("keygen over an existing key: exit %d, %q", code, errs)
	}
	if after, _ := os.ReadFile(key); !bytes.Equal(before, after) {
		t.Error("keygen changed an existing key")
	}
	var sums [2][]byte
	for i := range sums {
		out := filepath.Join(dir, fmt.Sprint("dist", i))
		code, stdout, errs := run(t, "build", "--out", out, "--pg", "17", "--sign-key", key, "--repo-url", "https://packages.example.org/pg_lease/")
		if code != ExitOK || !strings.Contains(stdout, "signed with ") {
			t.Fatalf("exit %d\n%s%s", code, stdout, errs)
		}
		sums[i], _ = os.ReadFile(filepath.Join(out, "SHA256SUMS"))
		repo, _ := os.ReadFile(filepath.Join(out, "pg_lease.repo"))
		pub, _ := os.ReadFile(key + ".pub")
		mine, _ := os.ReadFile(filepath.Join(out, model.PgLease.RPMKeyFile()))
		if !strings.Contains(string(repo), "baseurl=https://packages.example.org/pg_lease/el$releasever.$basearch\n") ||
			!strings.Contains(string(repo), "gpgcheck=1\nrepo_gpgcheck=1\ngpgkey=https://packages.example.org/pg_lease/RPM-GPG-KEY-pg_lease\n") {
			t.Errorf("pg_lease.repo:\n%s", repo)
		}
		if !bytes.Equal(pub, mine) {
			t.Error("the build's public key is not keygen's")
		}
	}
	stable := func(sums []byte) (kept string, signatures int) {
		for _, l := range strings.SplitAfter(string(sums), "\n") {
			if strings.HasSuffix(l, "/InRelease\n") || strings.HasSuffix(l, "/Release.gpg\n") || strings.HasSuffix(l, "/repomd.xml.asc\n") {
				signatures++
				continue
			}
			kept += l
		}
		return kept, signatures
	}
	a, n := stable(sums[0])
	b, _ := stable(sums[1])
	if a != b || n == 0 {
		t.Errorf("two signed builds differ beyond the repositories' %d signatures:\n%s\n%s", n, sums[0], sums[1])
	}
	code, stdout, _ := run(t, "build", "--out", filepath.Join(dir, "plain"), "--pg", "17")
	if code != ExitOK || !strings.Contains(stdout, "unsigned: pass --sign-key FILE") {
		t.Errorf("an unsigned build does not say so:\n%s", stdout)
	}
}

func TestRPMInstallOfMissingPackageFails(t *testing.T) {
	testenv.Docker(t)
	dist := filepath.Join(t.TempDir(), "dist")
	if code, _, errs := run(t, "build", "--out", dist, "--pg", "16"); code != ExitOK {
		t.Fatal(errs)
	}
	code, out, errs := run(t, "test", "--pg", "17", "--rpm", dist, "--results", t.TempDir())
	if code != ExitFailure || !strings.Contains(out, "No match for argument: pg_lease_17") || !strings.Contains(out, "0 passed, 1 failed") {
		t.Errorf("exit %d; want 1 with dnf's complaint\n%s\n%s", code, out, errs)
	}
	code, _, errs = run(t, "test", "--pg", "17", "--rpm", t.TempDir())
	if code != ExitUsage || !strings.Contains(errs, "is not a package repository") {
		t.Errorf("--rpm on an empty directory: exit %d, %q", code, errs)
	}
}

func TestDebNeedsAnAptRepository(t *testing.T) {
	code, _, errs := run(t, "test", "--pg", "17", "--deb", t.TempDir())
	if code != ExitUsage || !strings.Contains(errs, "is not an apt repository") {
		t.Errorf("--deb on an empty directory: exit %d, %q", code, errs)
	}
	code, _, errs = run(t, "test", "--pg", "17", "--deb", t.TempDir(), "--rpm", t.TempDir())
	if code != ExitUsage || !strings.Contains(errs, "none of the others can be") {
		t.Errorf("--deb with --rpm: exit %d, %q", code, errs)
	}
}

// TestBuildWithDpkg builds PostgreSQL 15's packages with both native tools
// (make deps installs rpm, dpkg-dev, debhelper and postgresql-server-dev-15).
func TestBuildWithDpkg(t *testing.T) {
	testenv.Tools(t, "rpmbuild", "dpkg-buildpackage", "pg_buildext")
	out := filepath.Join(t.TempDir(), "dist")
	code, stdout, errs := run(t, "build", "--out", out, "--pg", "15", "--builder", "rpmbuild,dpkg")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, errs)
	}
	v := model.PgLease.Version()
	for _, want := range []string{"pg_lease_15-" + v + "-1PGSTY.el9.noarch.rpm and pg_lease_15-" + v + "-1PGSTY.el9.src.rpm (rpmbuild)", "postgresql-15-pg-lease_" + v + "-1PGSTY~bookworm_all.deb (dpkg)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "apt/pool/main/p/pg-lease/postgresql-15-pg-lease_"+v+"-1PGSTY~bookworm_all.deb")); err != nil {
		t.Error(err)
	}
}

// TestNextStepsNameWhatWasBuilt: a build without CloudNativePG images
// (PostgreSQL 17: image volumes begin with 18) is not told to push them;
// one with them is.
func TestNextStepsNameWhatWasBuilt(t *testing.T) {
	for _, c := range []struct {
		pg, distro string
		images     bool
	}{{"17", "el9", false}, {"18", "el9", true}} {
		code, out, errs := run(t, "build", "--out", filepath.Join(t.TempDir(), "dist"), "--pg", c.pg, "--distro", c.distro)
		if code != ExitOK {
			t.Fatalf("build --pg %s --distro %s: exit %d\n%s", c.pg, c.distro, code, errs)
		}
		if got := strings.Contains(out, "push the CloudNativePG images"); got != c.images {
			t.Errorf("build --pg %s --distro %s: told to push images: %v; want %v\n%s", c.pg, c.distro, got, c.images, out)
		}
	}
}

// TestBuildInto: --pg 17, then --pg 18 --into the same tree: the tree
// holds both majors' packages, 17's byte for byte; --into a directory no
// build wrote, --out beside --into, and --drop without --into are usage
// errors that change nothing.
func TestBuildInto(t *testing.T) {
	out := filepath.Join(t.TempDir(), "repo")
	if code, _, errs := run(t, "build", "--out", out, "--pg", "17", "--distro", "bookworm"); code != ExitOK {
		t.Fatal(errs)
	}
	deb17 := filepath.Join(out, "apt/pool/main/p/pg-lease", "postgresql-17-pg-lease_"+model.PgLease.Version()+"-1PGSTY~bookworm_all.deb")
	before, err := os.ReadFile(deb17)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, errs := run(t, "build", "--into", out, "--pg", "18", "--distro", "bookworm")
	if code != ExitOK {
		t.Fatal(errs)
	}
	if !strings.Contains(stdout, "the tree holds "+model.PgLease.Version()) {
		t.Errorf("the build does not say what the tree holds:\n%s", stdout)
	}
	packages, _ := os.ReadFile(filepath.Join(out, "apt/dists/bookworm/main/binary-amd64/Packages"))
	for _, major := range []string{"17", "18"} {
		if !strings.Contains(string(packages), "Package: postgresql-"+major+"-pg-lease\n") {
			t.Errorf("Packages lacks %s's package after --into:\n%s", major, packages)
		}
	}
	if after, _ := os.ReadFile(deb17); string(after) != string(before) {
		t.Error("17's deb changed in the tree")
	}
	sums, _ := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	plain := t.TempDir()
	os.WriteFile(filepath.Join(plain, "notes.txt"), []byte("mine\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--into", plain}, "is not the output of pglease-gen build"},
		{[]string{"--into", out, "--out", plain}, "--out and --into"},
		{[]string{"--drop", "0.4.0"}, "give --into"},
		{[]string{"--into", out, "--drop", "0.4.0"}, "holds no packages of 0.4.0"},
	} {
		code, _, errs := run(t, append([]string{"build", "--pg", "18", "--distro", "bookworm"}, c.args...)...)
		if code == ExitOK || !strings.Contains(errs, c.want) {
			t.Errorf("build %v: exit %d, %q; want an error saying %q", c.args, code, errs, c.want)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(out, "SHA256SUMS")); string(after) != string(sums) {
		t.Error("a refused build changed the tree")
	}
	if b, _ := os.ReadFile(filepath.Join(plain, "notes.txt")); string(b) != "mine\n" {
		t.Error("a refused --into changed the directory")
	}
}

// TestChangelogGrowsWithReleases: --release 2, then --release 3, with
// their dates and notes: each is recorded in the changelog file, and the
// RPM's changelog and the deb's changelog.Debian.gz then hold release 3,
// 2 and the project's releases, newest first; a build that skips or
// repeats a release is refused and records nothing.
func TestChangelogGrowsWithReleases(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "changelog.yaml")
	v := model.PgLease.Version()
	build := func(args ...string) (int, string, string) {
		return run(t, append([]string{"build", "--out", filepath.Join(dir, "dist"), "--pg", "17", "--distro", "el9,bookworm", "--changelog", log, "--release-suffix", "ACME"}, args...)...)
	}
	for _, r := range [][]string{{"2", "2026-12-05", "Second"}, {"3", "2026-12-06", "Third"}} {
		if code, _, errs := build("--release", r[0], "--release-date", r[1], "--release-note", r[2]); code != ExitOK {
			t.Fatalf("release %s: %s", r[0], errs)
		}
	}
	recorded, _ := os.ReadFile(log)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--release", "5", "--release-date", "2026-12-07", "--release-note", "Five"}, "so the next is 4"},
		{[]string{"--release", "3", "--release-date", "2026-12-07", "--release-note", "Again"}, "release 3 is the packaged release (" + log + ":"},
	} {
		if code, _, errs := build(tc.args...); code == ExitOK || !strings.Contains(errs, tc.want) {
			t.Errorf("build %v: exit %d, %q; want an error saying %q", tc.args, code, errs, tc.want)
		}
	}
	if b, _ := os.ReadFile(log); string(b) != string(recorded) {
		t.Errorf("a refused build changed the changelog:\n%s", b)
	}
	if code, _, errs := build(); code != ExitOK {
		t.Fatal(errs)
	}
	b, err := os.ReadFile(filepath.Join(dir, "dist", "el9.x86_64", "pg_lease_17-"+v+"-3ACME.el9.noarch.rpm"))
	if err != nil {
		t.Fatalf("a build without --release is not release 3: %v", err)
	}
	info, err := rpm.ReadInfo("rpm", b)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range info.Changelog[:3] {
		got = append(got, c.Author[strings.LastIndex(c.Author, " ")+1:]+" "+c.Text)
	}
	joined := strings.Join(got, "|")
	for _, w := range []string{v + "-3ACME - Third", v + "-2ACME - Second", v + "-1"} {
		if !strings.Contains(joined, w) {
			t.Errorf("the RPM's changelog %q lacks %q", got, w)
		}
	}
	d, err := os.ReadFile(filepath.Join(dir, "dist", "apt/pool/main/p/pg-lease", "postgresql-17-pg-lease_"+v+"-3ACME~bookworm_all.deb"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := deb.Read(d)
	if err != nil {
		t.Fatal(err)
	}
	var changes string
	for _, m := range a.Data {
		if strings.HasSuffix(m.Name, "changelog.Debian.gz") {
			zr, err := gzip.NewReader(bytes.NewReader(m.Body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(zr)
			changes = string(b)
		}
	}
	i3, i2, i1 := strings.Index(changes, "("+v+"-3ACME~bookworm)"), strings.Index(changes, "("+v+"-2ACME~bookworm)"), strings.Index(changes, "("+v+"-1PGSTY~bookworm)")
	if i3 < 0 || i2 < i3 || i1 < i2 || !strings.Contains(changes, "  * Third") {
		t.Errorf("changelog.Debian.gz is not 3, 2, 1 newest first:\n%s", changes)
	}
}

// TestSignWithGPG: build --sign-with gpg:FPR signs through gpg with a key
// of its keyring (as one on an agent or a card): gpgv accepts each
// suite's InRelease, and the public key the build writes is that key.
func TestSignWithGPG(t *testing.T) {
	if testing.Short() {
		t.Skip("needs gpg and gpgv: skipped under -short (make test runs it)")
	}
	testenv.Tools(t, "gpgv")
	home, s := testenv.GnuPGSigner(t, 0)
	t.Setenv("GNUPGHOME", home)
	out := filepath.Join(t.TempDir(), "dist")
	if code, _, errs := run(t, "build", "--out", out, "--pg", "17", "--distro", "bookworm", "--sign-with", "gpg:"+s.Fingerprint()); code != ExitOK {
		t.Fatal(errs)
	}
	keyring := filepath.Join(home, "pub.gpg")
	if b, err := exec.Command("gpg", "--homedir", home, "--export", s.Fingerprint()).Output(); err != nil || os.WriteFile(keyring, b, 0o644) != nil {
		t.Fatalf("gpg --export: %v", err)
	}
	if o, err := exec.Command("gpgv", "--keyring", keyring, filepath.Join(out, "apt/dists/bookworm/InRelease")).CombinedOutput(); err != nil {
		t.Errorf("gpgv InRelease made through gpg: %v\n%s", err, o)
	}
	pub, _ := os.ReadFile(filepath.Join(out, model.PgLease.RPMKeyFile()))
	ids, err := runner.KeyIDs(pub)
	if err != nil || !strings.HasSuffix(s.Fingerprint(), strings.ToUpper(ids[0])) {
		t.Errorf("the build's public key is %v, not the gpg key %s (%v)", ids, s.Fingerprint(), err)
	}
}

// signatureTime is the creation time of the first signature in an armored
// detached signature or a cleartext-signed text.
func signatureTime(b []byte) (time.Time, error) {
	at := bytes.Index(b, []byte("-----BEGIN PGP SIGNATURE-----"))
	if at < 0 {
		return time.Time{}, fmt.Errorf("no signature block")
	}
	block, err := armor.Decode(bytes.NewReader(b[at:]))
	if err != nil {
		return time.Time{}, err
	}
	p, err := packet.Read(block.Body)
	if err != nil {
		return time.Time{}, err
	}
	sig, ok := p.(*packet.Signature)
	if !ok {
		return time.Time{}, fmt.Errorf("not a signature packet: %T", p)
	}
	return sig.CreationTime, nil
}

// TestRepositorySignedWhenBuilt: with a key made days before the
// release, the suites' and repodata's signatures are dated when the build
// ran, the .dsc's (as the packages') at SOURCE_DATE_EPOCH (so they stay
// byte-stable while a host sees when the repository was published).
func TestRepositorySignedWhenBuilt(t *testing.T) {
	dir := t.TempDir()
	priv, _, err := sign.Generate("pg_lease test", "test@pglease.invalid", 0, nil, model.Packages.Released().Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "key.asc")
	os.WriteFile(key, priv, 0o600)
	out := filepath.Join(dir, "dist")
	start := time.Now().Add(-time.Second)
	if code, _, errs := run(t, "build", "--out", out, "--pg", "17", "--distro", "el9,bookworm", "--sign-key", key); code != ExitOK {
		t.Fatal(errs)
	}
	v := model.PgLease.Version()
	for file, now := range map[string]bool{
		"apt/dists/bookworm/Release.gpg":                                  true,
		"apt/dists/bookworm/InRelease":                                    true,
		"el9.x86_64/repodata/repomd.xml.asc":                              true,
		"SHA256SUMS.asc":                                                  true,
		"apt/pool/main/p/pg-lease/pg-lease_" + v + "-1PGSTY~bookworm.dsc": false,
	} {
		b, _ := os.ReadFile(filepath.Join(out, file))
		when, err := signatureTime(b)
		switch {
		case err != nil:
			t.Errorf("%s: %v", file, err)
		case now && when.Before(start.Truncate(time.Second)):
			t.Errorf("%s is signed at %s, before the build ran (%s)", file, when, start)
		case !now && !when.Equal(model.Packages.Released()):
			t.Errorf("%s is signed at %s, not at SOURCE_DATE_EPOCH (%s)", file, when, model.Packages.Released())
		}
	}
}
