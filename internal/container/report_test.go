package container

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/pglease/pglease-gen/internal/junit"
	"github.com/pglease/pglease-gen/internal/suite"
)

// TestReportCountsSkipped: a skipped major has its own row and reason,
// counts as skipped (not passed, not failed), and is a skipped suite in
// JUnit.
func TestReportCountsSkipped(t *testing.T) {
	results := []MajorResult{
		{Major: 14, Image: "pglease/postgres:14-arm64", Skipped: "no server build of PostgreSQL 14 for arm64 here"},
		{Major: 16, Image: "pglease/postgres:16-arm64", Server: "16.14", Machine: "aarch64", Version: "PostgreSQL 16.14 on aarch64-unknown-linux-gnu",
			Took: time.Second, Result: suite.Result{Cases: []suite.Case{{Kind: suite.Regress, Name: "api", Passed: true}}}},
	}
	var out bytes.Buffer
	Report(&out, results)
	for _, want := range []string{"pg14  skip   no server build of PostgreSQL 14 for arm64 here\n",
		"pg16  ok     PostgreSQL 16.14  aarch64  regress 1/1", "PostgreSQL 16.14 on aarch64-unknown-linux-gnu\n",
		"\n1 passed, 0 failed, 1 skipped (PostgreSQL 14, 16)\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if results[0].Passed() || results[0].Failed() {
		t.Error("a skipped major counts as passed or failed")
	}
	var x bytes.Buffer
	if err := junit.Write(&x, JUnit(results)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<testsuites tests="4" failures="0" errors="0" skipped="3"`, `<testsuite name="pg14.isolation" tests="1" failures="0" errors="0" skipped="1"`,
		`<testsuite name="pg14.update" tests="1" failures="0" errors="0" skipped="1"`,
		`<skipped message="no server build of PostgreSQL 14 for arm64 here">`} {
		if !strings.Contains(x.String(), want) {
			t.Errorf("JUnit lacks %q:\n%s", want, x.String())
		}
	}
}

// TestReportAligns: rows whose servers report versions of different
// lengths (Debian's long form, a release candidate) still line up.
func TestReportAligns(t *testing.T) {
	passed := suite.Result{Cases: []suite.Case{{Kind: suite.Regress, Name: "api", Passed: true}}}
	results := []MajorResult{
		{Major: 14, Server: "14.22", Machine: "x86_64", Version: "PostgreSQL 14.22", Took: time.Second, Result: passed},
		{Major: 15, Server: "15.20 (Debian 15.20-0+deb12u1)", Machine: "x86_64", Version: "PostgreSQL 15.20", Took: time.Second, Result: passed},
		{Major: 19, Server: "19rc1 (Debian 19~rc1-1)", Machine: "aarch64", Version: "PostgreSQL 19rc1", Took: 12 * time.Second, Result: passed},
	}
	var out bytes.Buffer
	Report(&out, results)
	col, timeEnd := -1, -1
	for _, l := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(l, "pg") {
			continue
		}
		// the counts and the time column start where the first row's do
		i := strings.Index(l, "regress")
		if col == -1 {
			col, timeEnd = i, strings.Index(l, "s   PostgreSQL")
		}
		if end := strings.Index(l, "s   PostgreSQL"); i != col || i < 0 || end != timeEnd && timeEnd != -1 {
			t.Errorf("rows do not line up (regress at %d, first row at %d):\n%s", i, col, out.String())
		}
	}
	if !strings.Contains(out.String(), "PostgreSQL 19rc1 (Debian 19~rc1-1)") {
		t.Errorf("the release candidate is not named as such:\n%s", out.String())
	}
}
