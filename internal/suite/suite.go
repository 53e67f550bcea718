// Package suite runs the extension's pg_regress and pg_isolation_regress
// suites against a running server and reports each test's outcome. It runs
// the drivers through an Executor, so the same code drives a local server
// and one inside a container.
package suite

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Executor runs a command and reads files where the drivers run.
type Executor interface {
	// Run runs argv and returns its standard output, its standard error and
	// its exit code; err is for failures to run it at all. The two streams
	// stay apart: the newer drivers write results to one and diagnostics
	// to the other, and their buffering interleaves them mid-line.
	Run(ctx context.Context, argv []string) (stdout, stderr []byte, code int, err error)
	// ReadFile reads a file written by a driver; a missing file is an error
	// wrapping fs.ErrNotExist.
	ReadFile(ctx context.Context, path string) ([]byte, error)
}

// Kind is one of the two suites.
type Kind string

const (
	Regress   Kind = "regress"
	Isolation Kind = "isolation"
)

// Update is the kind of an update check (package runner): not a driver's
// suite, but reported like one.
const Update Kind = "update"

// Kinds lists the suites in the order they run.
var Kinds = []Kind{Regress, Isolation}

// Reported lists every kind a result can hold, in report order.
var Reported = []Kind{Regress, Isolation, Update}

// TestDir is the directory of the suite's tests, ext their file extension.
func (k Kind) TestDir() (string, string) {
	if k == Regress {
		return "sql", ".sql"
	}
	return "specs", ".spec"
}

// Tests lists a suite's tests, sorted, from the suite's directory in src.
func Tests(src fs.FS, k Kind) ([]string, error) {
	dir, ext := k.TestDir()
	entries, err := fs.ReadDir(src, path.Join(string(k), dir))
	if err != nil {
		return nil, fmt.Errorf("list %s tests: %w", k, err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ext) {
			names = append(names, strings.TrimSuffix(e.Name(), ext))
		}
	}
	slices.Sort(names)
	return names, nil
}

// AllTests lists the tests of both suites.
func AllTests(src fs.FS) (map[Kind][]string, error) {
	tests := map[Kind][]string{}
	for _, k := range Kinds {
		var err error
		if tests[k], err = Tests(src, k); err != nil {
			return nil, err
		}
	}
	return tests, nil
}

// Extract copies the suites (regress/ and isolation/) from src into dir.
func Extract(src fs.FS, dir string) error {
	for _, k := range Kinds {
		err := fs.WalkDir(src, string(k), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			dst := filepath.Join(dir, filepath.FromSlash(p))
			if d.IsDir() {
				return os.MkdirAll(dst, 0o755)
			}
			b, err := fs.ReadFile(src, p)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o644)
		})
		if err != nil {
			return fmt.Errorf("extract suites: %w", err)
		}
	}
	return nil
}

// Options say where the drivers and the suites are, as seen by the Executor.
type Options struct {
	PgRegress          string
	PgIsolationRegress string
	BinDir             string // where psql is
	InputDir           string // holds regress/ and isolation/
	OutputDir          string // results go to OutputDir/regress and OutputDir/isolation
	Host               string // socket directory
	Port               int
	User               string
	Tests              map[Kind][]string
	// Starting, when set, is called as each suite starts.
	Starting func(Kind)
	// Suffix is added to every test's name in the result ("@0.1.0"), so
	// that several runs of one test can be told apart.
	Suffix string
}

// Case is the outcome of one test.
type Case struct {
	Kind     Kind
	Name     string
	Passed   bool
	Duration time.Duration
}

// Result is the outcome of one run of both suites.
type Result struct {
	Cases  []Case
	Output map[Kind]string // what each driver printed
	Diffs  map[Kind]string // regression.diffs of each failed suite
	// CaseDiffs is the diff of each failed test, by kind and name.
	CaseDiffs map[Kind]map[string]string
}

// NewResult is an empty result, its maps made.
func NewResult() Result {
	return Result{Output: map[Kind]string{}, Diffs: map[Kind]string{}, CaseDiffs: map[Kind]map[string]string{}}
}

// Add appends the cases, output and diffs of another run to r, which
// NewResult made.
func (r *Result) Add(o Result) {
	r.Cases = append(r.Cases, o.Cases...)
	for k, v := range o.Output {
		r.Output[k] += v
	}
	for k, v := range o.Diffs {
		r.Diffs[k] += v
	}
	for k, m := range o.CaseDiffs {
		if r.CaseDiffs[k] == nil {
			r.CaseDiffs[k] = map[string]string{}
		}
		maps.Copy(r.CaseDiffs[k], m)
	}
}

// Passed reports whether both suites ran every test and all passed.
func (r Result) Passed() bool {
	if len(r.Cases) == 0 || len(r.Diffs) > 0 {
		return false
	}
	for _, c := range r.Cases {
		if !c.Passed {
			return false
		}
	}
	return true
}

// Counts returns how many tests passed and failed.
func (r Result) Counts() (passed, failed int) { return r.Count("") }

// Count is Counts for the tests of one kind, or of all kinds when k is "".
func (r Result) Count(k Kind) (passed, failed int) {
	for _, c := range r.Cases {
		if k != "" && c.Kind != k {
			continue
		}
		if c.Passed {
			passed++
		} else {
			failed++
		}
	}
	return
}

// Run runs both suites with ex and reports each test. A suite that fails
// has its regression.diffs in the result. err is for failures to run a
// driver at all, not for failing tests.
func Run(ctx context.Context, ex Executor, o Options) (Result, error) {
	res := NewResult()
	for _, k := range Kinds {
		tests := o.Tests[k]
		if len(tests) == 0 {
			return res, fmt.Errorf("run %s suite: no tests", k)
		}
		driver, db := o.PgRegress, "contrib_regression"
		if k == Isolation {
			driver, db = o.PgIsolationRegress, "isolation_regression"
		}
		if o.Starting != nil {
			o.Starting(k)
		}
		out := path.Join(o.OutputDir, string(k))
		argv := []string{driver,
			"--inputdir=" + path.Join(o.InputDir, string(k)),
			"--outputdir=" + out,
			"--bindir=" + o.BinDir,
			"--host=" + o.Host,
			fmt.Sprintf("--port=%d", o.Port),
			"--user=" + o.User,
			"--dbname=" + db,
			"--no-locale",
		}
		argv = append(argv, tests...)
		stdout, stderr, code, err := ex.Run(ctx, argv)
		output := append(append([]byte{}, stdout...), stderr...)
		if err != nil {
			return res, fmt.Errorf("run %s: %w\n%s", path.Base(driver), err, output)
		}
		res.Output[k] = string(output)
		cases := markMissing(k, tests, ParseOutput(k, stdout))
		for i := range cases {
			cases[i].Name += o.Suffix
		}
		res.Cases = append(res.Cases, cases...)
		if code != 0 {
			diffs, err := ex.ReadFile(ctx, path.Join(out, "regression.diffs"))
			if err != nil || len(diffs) == 0 {
				diffs = []byte(fmt.Sprintf("%s exited with %d and left no regression.diffs; its output:\n%s", path.Base(driver), code, output))
			}
			res.Diffs[k] = string(diffs)
			res.CaseDiffs[k] = map[string]string{}
			for name, d := range SplitDiffs(string(diffs)) {
				res.CaseDiffs[k][name+o.Suffix] = d
			}
		}
	}
	return res, nil
}

// markMissing adds a failed case for every test the driver did not report,
// so a driver that stops early cannot make a suite look smaller and green.
func markMissing(k Kind, tests []string, cases []Case) []Case {
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.Name] = true
	}
	for _, t := range tests {
		if !seen[t] {
			cases = append(cases, Case{Kind: k, Name: t})
		}
	}
	return cases
}

var (
	// PostgreSQL 14 and 15: "test name   ... ok   12 ms", "     name ... FAILED   3 ms"
	oldLine = regexp.MustCompile(`^(?:test\s+)?(\S+)\s+\.\.\.\s+(ok|FAILED|failed \(ignored\))\s+(\d+) ms`)
	// PostgreSQL 16 and later (TAP): "ok 1         - name   12 ms", "not ok 2 - name  3 ms"
	tapLine = regexp.MustCompile(`^(ok|not ok)\s+\d+\s+[-+]\s+(\S+)\s+(\d+) ms`)
)

// ParseOutput reads the per-test lines of pg_regress or
// pg_isolation_regress output, in either the old or the TAP format.
func ParseOutput(k Kind, out []byte) []Case {
	var cases []Case
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		var name, status, ms string
		if m := oldLine.FindStringSubmatch(line); m != nil {
			name, status, ms = m[1], m[2], m[3]
		} else if m := tapLine.FindStringSubmatch(line); m != nil {
			name, status, ms = m[2], m[1], m[3]
		} else {
			continue
		}
		var d time.Duration
		fmt.Sscanf(ms, "%d", &d)
		cases = append(cases, Case{Kind: k, Name: name, Passed: status == "ok", Duration: d * time.Millisecond})
	}
	return cases
}

// Report writes the result's per-suite summary, and the diffs of failed
// suites, to w.
func Report(w io.Writer, r Result) {
	for _, k := range Reported {
		p, f := r.Count(k)
		fmt.Fprintf(w, "%-10s %d passed, %d failed\n", string(k)+":", p, f)
	}
	for _, k := range Reported {
		if d, ok := r.Diffs[k]; ok {
			fmt.Fprintf(w, "\n=== %s regression.diffs ===\n%s", k, d)
		}
	}
	p, f := r.Counts()
	fmt.Fprintf(w, "suites: %d passed, %d failed\n", p, f)
}

// SplitDiffs splits a regression.diffs file into the diff of each test,
// keyed by test name (the results file's base name without .out).
func SplitDiffs(diffs string) map[string]string {
	out := map[string]string{}
	var name string
	var cur strings.Builder
	flush := func() {
		if name != "" {
			out[name] += cur.String()
		}
		cur.Reset()
	}
	for _, line := range strings.SplitAfter(diffs, "\n") {
		if strings.HasPrefix(line, "diff ") {
			flush()
			f := strings.Fields(line)
			name = strings.TrimSuffix(path.Base(f[len(f)-1]), ".out")
		}
		cur.WriteString(line)
	}
	flush()
	return out
}
