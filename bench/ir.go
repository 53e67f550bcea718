package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/pglease/pglease-gen/internal/pgserver"
)

// irBench counts the instructions a backend executes per operation, this
// tree's pg_lease against a baseline install script: a stand-alone
// backend (postgres --single, one statement per transaction, as an
// autocommitting client sends them) under valgrind's cachegrind, on copies
// of one shut-down cluster. The count does not depend on what else the
// machine does, so a difference of one per cent is a real one, where the
// timed runs of -only ab cannot tell a few per cent from the machine's
// drift. It counts the backend's own user-space work (not the kernel's,
// not the wait for a flush): the CPU side of a cycle.
func irBench(ctx context.Context, o options, work string) (string, error) {
	valgrind, err := exec.LookPath("valgrind")
	if err != nil {
		return "", errors.New("-only ir needs valgrind: apt-get install valgrind")
	}
	s, done, err := startWithBaseline(ctx, o, work)
	if err != nil {
		return "", err
	}
	defer done()
	for db, sqls := range map[string][]string{
		"this_ir":    {"CREATE EXTENSION pg_lease"},
		"base_ir":    {"CREATE EXTENSION pg_lease_base"},
		"session_ir": {"CREATE EXTENSION pg_lease", "SELECT lease.set_floor('session')"},
	} {
		if err := pgserver.Exec(ctx, s.DSN(), "CREATE DATABASE "+db); err != nil {
			return "", err
		}
		if err := pgserver.Exec(ctx, strings.Replace(s.DSN(), "dbname=postgres", "dbname="+db, 1), sqls...); err != nil {
			return "", err
		}
	}
	if err := s.srv.Shutdown(ctx); err != nil {
		return "", err
	}
	count := func(db, sync string, script func(int) string) (float64, error) {
		return singleUserIR(ctx, s, valgrind, db, sync, script)
	}
	rows := []struct {
		name, this, sync string
		script           func(int) string
		less             func(int) string // counted and taken off, if set
	}{
		{"cycle, synchronous_commit = on", "this_ir", "on", irCycles, nil},
		{"renew, synchronous_commit = on", "this_ir", "on", irRenews, nil},
		{"cycle, synchronous_commit = off (the floor flushes each change)", "this_ir", "off", irCycles, nil},
		{"cycle, synchronous_commit = on, less the script's reads of the epoch", "this_ir", "on", irCycles, irLookups},
		{"cycle, synchronous_commit = off, less the script's reads of the epoch", "this_ir", "off", irCycles, irLookups},
		{"cycle, synchronous_commit = off, this with set_floor('session')", "session_ir", "off", irCycles, nil},
		{"renew, synchronous_commit = off, this with set_floor('session')", "session_ir", "off", irRenews, nil},
		{"release alone (nobody watches), synchronous_commit = on", "this_ir", "on", irReleases, irGrants},
		{"keep_alive of a session of 10 names, synchronous_commit = off", "this_ir", "off", irKeepAlives, irSessionLookups},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Instructions per operation, this tree against %s, PostgreSQL %s\n\n", o.baseline, s.Version)
	b.WriteString("| workload | this | baseline | this / baseline |\n|---|---:|---:|---:|\n")
	for _, r := range rows {
		if only := os.Getenv("BENCH_IR_ONLY"); only != "" && !strings.Contains(r.name, only) {
			continue
		}
		// script's count, less less's when set
		net := func(db string) (float64, error) {
			n, err := count(db, r.sync, r.script)
			if err != nil || r.less == nil {
				return n, err
			}
			m, err := count(db, r.sync, r.less)
			return n - m, err
		}
		this, err := net(r.this)
		if err != nil {
			return "", err
		}
		old, err := net("base_ir")
		if err != nil {
			return "", err
		}
		say("%s: this %.0f, baseline %.0f instructions per operation", r.name, this, old)
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.3f |\n", r.name, this, old, this/old)
	}
	return b.String(), nil
}

// singleUserIR is the instructions per operation of script in database
// db of the shut-down server s, at synchronous_commit = sync: a
// stand-alone backend under cachegrind runs the script at two lengths,
// and the difference is what is counted (no start, no first plans).
func singleUserIR(ctx context.Context, s *benchServer, valgrind, db, sync string, script func(int) string) (float64, error) {
	return perOp(600, 2600, func(n int) (int64, error) {
		tool := []string{"--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"}
		if dir := os.Getenv("BENCH_IR_CALLGRIND"); dir != "" {
			// each run's profile by function, for callgrind_annotate
			// (numbered: a row's script and the one taken off it share db, sync and n)
			callgrindRuns++
			tool = []string{"--tool=callgrind", fmt.Sprintf("--callgrind-out-file=%s/%02d-%s-%s-%d.out", dir, callgrindRuns, db, sync, n)}
		}
		out, err := s.srv.SingleUser(ctx, db, strings.NewReader(script(n)), []string{"synchronous_commit=" + sync},
			append([]string{valgrind}, tool...)...)
		if err == nil && strings.Contains(string(out), "ERROR:") {
			err = errors.New("a statement failed")
		}
		if err != nil {
			return 0, fmt.Errorf("%s at synchronous_commit = %s: %w\n%s", db, sync, err, tail(string(out), 2000))
		}
		refs, err := valgrindRefs(out)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", db, err)
		}
		return refs, nil
	})
}

// callgrindRuns numbers the profiles of one run (BENCH_IR_CALLGRIND).
var callgrindRuns int

// perOp is the instructions per operation of two runs, of small and of
// large operations (run(n) counts one run's): their difference over the
// operations between, so that what every run does once (the start, the
// first calls) cancels out.
func perOp(small, large int, run func(n int) (int64, error)) (float64, error) {
	a, err := run(small)
	if err != nil {
		return 0, err
	}
	b, err := run(large)
	if err != nil {
		return 0, err
	}
	return float64(b-a) / float64(large-small), nil
}

// valgrindRefs is the instruction count in cachegrind's output.
func valgrindRefs(out []byte) (int64, error) {
	m := irRefs.FindStringSubmatch(string(out))
	if m == nil {
		return 0, fmt.Errorf("no instruction count in valgrind's output\n%s", tail(string(out), 2000))
	}
	return strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
}

var irRefs = regexp.MustCompile(`I\s+refs:\s+([\d,]+)`)

// irNames is how many names the scripts cycle through: every run of
// either length takes each name at least once, so the difference
// between two runs holds no first grant.
const irNames = 500

// irCycles is n acquire/release cycles, each call its own transaction;
// release reads the epoch from the table (the same statement for every
// version).
func irCycles(n int) string {
	var b strings.Builder
	for i := range n {
		name := fmt.Sprintf("ir-%03d", i%irNames)
		fmt.Fprintf(&b, "SELECT 1 FROM lease.acquire('%s', 'o', '30s');\n", name)
		fmt.Fprintf(&b, "SELECT lease.release('%s', 'o', (SELECT l.epoch FROM lease.leases AS l WHERE l.name = '%s'));\n", name, name)
	}
	return b.String()
}

// irLookups is irCycles' reads of the epoch to release with, alone: the
// script's own query, planned at every statement of a stand-alone
// backend (it costs more in 0.5.0's table, which has one more column and
// a second index), not the functions' cost. Counted and taken off, what is
// left is the two calls.
func irLookups(n int) string {
	var b strings.Builder
	for i := range n {
		name := fmt.Sprintf("ir-%03d", i%irNames)
		fmt.Fprintf(&b, "SELECT (SELECT l.epoch FROM lease.leases AS l WHERE l.name = '%s');\n", name)
	}
	return b.String()
}

// irGrants is n first grants, each of a new name.
func irGrants(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "SELECT 1 FROM lease.acquire('rel-%05d', 'o', '50s');\n", i)
	}
	return b.String()
}

// irReleases is irGrants, then the n releases: with irGrants counted and
// taken off, what a release costs.
func irReleases(n int) string {
	var b strings.Builder
	b.WriteString(irGrants(n))
	for i := range n {
		name := fmt.Sprintf("rel-%05d", i)
		fmt.Fprintf(&b, "SELECT lease.release('%s', 'o', (SELECT l.epoch FROM lease.leases AS l WHERE l.name = '%s'));\n", name, name)
	}
	return b.String()
}

// irKeepAlives opens a session, takes 10 names under it, then keeps it
// alive n times (the session's id read by the script: random since
// 0.5.1).
func irKeepAlives(n int) string {
	var b strings.Builder
	b.WriteString("SELECT 1 FROM lease.open_session('o', '50s');\n")
	for i := range 10 {
		fmt.Fprintf(&b, "SELECT 1 FROM lease.session_acquire((SELECT s.id FROM lease.sessions AS s), 'o', 'ka-%02d');\n", i)
	}
	for range n {
		b.WriteString("SELECT 1 FROM lease.keep_alive((SELECT s.id FROM lease.sessions AS s), 'o');\n")
	}
	return b.String()
}

// irSessionLookups is irKeepAlives' reads of the session's id, alone
// (counted and taken off).
func irSessionLookups(n int) string {
	var b strings.Builder
	b.WriteString("SELECT 1 FROM lease.open_session('o', '50s');\n")
	for range n {
		b.WriteString("SELECT (SELECT s.id FROM lease.sessions AS s);\n")
	}
	return b.String()
}

// irRenews takes every name, then renews n times.
func irRenews(n int) string {
	var b strings.Builder
	for i := range irNames {
		fmt.Fprintf(&b, "SELECT 1 FROM lease.acquire('ir-%03d', 'o', '50s');\n", i)
	}
	for i := range n {
		name := fmt.Sprintf("ir-%03d", i%irNames)
		fmt.Fprintf(&b, "SELECT 1 FROM lease.renew('%s', 'o', (SELECT l.epoch FROM lease.leases AS l WHERE l.name = '%s'), '50s');\n", name, name)
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
