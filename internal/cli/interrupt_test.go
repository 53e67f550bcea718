package cli

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/container"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/runner"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// TestMain lets the test binary be pglease-gen itself, for the tests that
// must signal a real process: PGLEASE_GEN_AS_CLI=1 runs the command line.
func TestMain(m *testing.M) {
	if os.Getenv("PGLEASE_GEN_AS_CLI") == "1" {
		os.Exit(Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestInterruptedRunIsNoPass interrupts a real `pglease-gen test` (SIGINT,
// as Ctrl-C or a CI step's timeout sends) once the regress suite has
// run and the isolation suite has started: it must exit non-zero saying "interrupted", and its JUnit must
// hold every planned check, those that did not finish as errors, so that
// no reader of the report sees a smaller green run.
func TestInterruptedRunIsNoPass(t *testing.T) {
	testenv.Docker(t)
	dir := t.TempDir()
	report := filepath.Join(dir, "junit.xml")
	cmd := exec.Command(os.Args[0], "test", "--pg", "15", "--image", "pglease/postgres", "--versions", "newest",
		"--results", filepath.Join(dir, "results"), "--junit", report, "--json")
	cmd.Env = append(os.Environ(), "PGLEASE_GEN_AS_CLI=1")
	// with --json the report and the progress are on stderr, the JSON on stdout
	stdout, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb, jsonOut strings.Builder
	cmd.Stdout = &jsonOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	signalled := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if !signalled && strings.Contains(sc.Text(), "pg15: isolation") {
			signalled = true
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	if !signalled {
		t.Fatalf("the run ended before its isolation suite started, so nothing was interrupted:\n%s\n%s", out.String(), errb.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitFailure {
		t.Fatalf("an interrupted run exited with %v, want %d\n%s\n%s", err, ExitFailure, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "pglease-gen: interrupted: ") || !strings.Contains(out.String(), "did not finish: the run was interrupted") {
		t.Errorf("the run does not say it was interrupted:\n%s\n%s", out.String(), errb.String())
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("no JUnit report after the interrupt: %v\n%s", err, out.String())
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suites   []struct {
			Cases []struct {
				Name  string `xml:"name,attr"`
				Error *struct {
					Message string `xml:"message,attr"`
				} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	passes, err := runner.Passes(model.PgLease, pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	planned := runner.Planned(passes[:1], runner.Updates(model.PgLease))
	seen := map[string]bool{}
	interrupted := 0
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			seen[c.Name] = true
			if c.Error != nil && strings.HasPrefix(c.Error.Message, "interrupted") {
				interrupted++
			}
		}
	}
	for _, c := range planned {
		if !seen[c.Name] {
			t.Errorf("JUnit leaves out the planned check %s", c.Name)
		}
	}
	if doc.Errors == 0 || interrupted == 0 || doc.Errors < interrupted {
		t.Errorf("JUnit of an interrupted run: %d tests, %d failures, %d errors, %d marked interrupted; want the unfinished checks as errors\n%s", doc.Tests, doc.Failures, doc.Errors, interrupted, b)
	}
	if doc.Tests < len(planned) {
		t.Errorf("JUnit counts %d tests, fewer than the %d planned", doc.Tests, len(planned))
	}
	var sum container.Summary
	if err := json.Unmarshal([]byte(jsonOut.String()), &sum); err != nil {
		t.Fatalf("--json: %v\n%s", err, jsonOut.String())
	}
	statuses := map[string]int{}
	for _, m := range sum.Majors {
		for _, c := range m.Checks {
			statuses[c.Status]++
		}
	}
	if !sum.Interrupted || sum.Failed != 1 || sum.Unfinished == 0 || statuses["error"] != sum.Unfinished || sum.Checks != len(planned) ||
		statuses["error"]+statuses["passed"]+statuses["failed"] != len(planned) {
		t.Errorf("--json of an interrupted run: %+v, statuses %v; want every planned check, the unfinished as errors", sum, statuses)
	}
	t.Logf("interrupted once the isolation suite started: %d tests in the JUnit, %d errors (%d planned checks); %s",
		doc.Tests, doc.Errors, len(planned), sum.Message)
}

// TestEmptyValuesAreErrors: a flag given with an empty value (or release
// 0) is an error naming the flag, not the default, and writes nothing.
func TestEmptyValuesAreErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--distro", ""}, "--distro '': use all or some of"},
		{[]string{"--config", ""}, "--config '': name a settings file"},
		{[]string{"--release-suffix", ""}, "--release-suffix '': give a value"},
		{[]string{"--maintainer", ""}, "--maintainer '': give a value"},
		{[]string{"--release", "0"}, "--release 0: a whole number from 1 to 999"},
		{[]string{"--maintainer", "%(id) <a@b.example>"}, `--maintainer: maintainer "%(id) <a@b.example>": holds "%"`},
	} {
		out := filepath.Join(t.TempDir(), "dist")
		code, _, errs := run(t, append([]string{"build", "--out", out}, tc.args...)...)
		if code == ExitOK || !strings.Contains(errs, tc.want) {
			t.Errorf("build %q: exit %d, %q; want %q", tc.args, code, errs, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("build %q wrote %s", tc.args, out)
		}
	}
	code, _, errs := run(t, "test", "--pg", "15", "--rpm", t.TempDir(), "--distro", "")
	if code == ExitOK || !strings.Contains(errs, "--distro '': name a release") {
		t.Errorf("test --distro '': exit %d, %q", code, errs)
	}
}

// TestFlagCompletion: the shell completion offers the model's values for
// --pg, --distro, --builder and --arch, after a comma the rest of a list.
func TestFlagCompletion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "--pg", "14,1"}, "14,15\n14,16\n14,17\n14,18\n14,19\n:6\n"},
		{[]string{"test", "--distro", "b"}, "bookworm\n:6\n"},
		{[]string{"build", "--builder", "go,r"}, "go,rpmbuild\n:6\n"},
		{[]string{"images", "--arch", ""}, "amd64\narm64\n:4\n"},
	} {
		code, out, errs := run(t, append([]string{"__complete"}, tc.args...)...)
		if code != ExitOK || out != tc.want {
			t.Errorf("complete %q: exit %d, %q (%s); want %q", tc.args, code, out, errs, tc.want)
		}
	}
}

// TestUpstreamIsTheSameForEveryPackager builds with the defaults, then with
// every packager setting changed and another SOURCE_DATE_EPOCH: the source
// tarball (Source0), Debian's orig tarball and the PGXN zip are the same
// bytes and carry no debian/. Before they were upstream's alone,
// META.json, five debian/ files and every member's date changed with the
// packager.
func TestUpstreamIsTheSameForEveryPackager(t *testing.T) {
	acme := filepath.Join(t.TempDir(), "acme.yaml")
	if err := os.WriteFile(acme, []byte("vendor: ACME\nmaintainer: ACME packaging <packages@acme.example>\nrelease: 2\nrelease_date: 2026-12-02\n"+
		"release_note: Rebuilt for ACME\nhomepage: https://acme.example/pg_lease\nsource_url: https://downloads.acme.example/pg_lease\n"+
		"repo_url: https://packages.acme.example/pg_lease\nimage_repository: registry.acme.example/pg_lease\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	orig := "apt/pool/main/p/" + model.PgLease.DebSource() + "/" + model.PgLease.DebSource() + "_" + model.PgLease.Version() + ".orig.tar.gz"
	upstream := []string{model.PgLease.Tarball(), model.PgLease.PGXNZip(), orig}
	sums := map[string][2]string{}
	for i, args := range [][]string{nil, {"--config", acme, "--allow-unsigned"}} {
		if i == 1 {
			t.Setenv("SOURCE_DATE_EPOCH", "1796256000") // 2026-12-03
		}
		out := filepath.Join(t.TempDir(), "dist")
		code, _, errs := run(t, append([]string{"build", "--out", out, "--pg", "17", "--distro", "el9,bookworm"}, args...)...)
		if code != ExitOK {
			t.Fatalf("build %q: exit %d\n%s", args, code, errs)
		}
		for _, name := range upstream {
			b, err := os.ReadFile(filepath.Join(out, name))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			s := sums[name]
			s[i] = hex.EncodeToString(sum[:])
			sums[name] = s
		}
		if i == 0 {
			b, _ := os.ReadFile(filepath.Join(out, model.PgLease.Tarball()))
			members := tarMembers(t, b)
			if slices.ContainsFunc(members, func(m string) bool { return strings.Contains(m, "/debian/") }) {
				t.Errorf("the upstream tarball carries debian/: %v", members)
			}
		}
	}
	for name, s := range sums {
		if s[0] != s[1] {
			t.Errorf("%s differs with the packager's settings: %s, %s", name, s[0], s[1])
		} else {
			t.Logf("%s: sha256 %s for both builds", name, s[0])
		}
	}
	if sums[model.PgLease.Tarball()] != sums[orig] {
		t.Errorf("Debian's orig is not the upstream tarball")
	}
}

func tarMembers(t *testing.T, tgz []byte) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}
