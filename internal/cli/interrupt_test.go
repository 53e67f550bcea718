package cli

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	var jsonOut strings.Builder
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
		t.Fatalf("the run ended before its isolation suite started, so nothing was interrupted:\n%s", out.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitFailure {
		t.Fatalf("an interrupted run exited with %v, want %d\n%s", err, ExitFailure, out.String())
	}
	if !strings.Contains(out.String(), "pglease-gen: interrupted: ") || !strings.Contains(out.String(), "did not finish: the run was interrupted") {
		t.Errorf("the run does not say it was interrupted:\n%s", out.String())
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
