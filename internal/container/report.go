package container

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pglease/pglease-gen/internal/junit"
	"github.com/pglease/pglease-gen/internal/suite"
)

// Report writes, for every major that failed, its error or its regression
// diffs, then one summary line per major and a last line counting majors:
// "N passed, M failed".
func Report(w io.Writer, results []MajorResult) {
	for _, r := range results {
		if r.Err != nil {
			fmt.Fprintf(w, "\n=== %s (%s) could not run the suites ===\n%v\n", r.Key(), r.Image, r.Err)
		}
		for _, k := range suite.Kinds {
			if d, ok := r.Result.Diffs[k]; ok {
				fmt.Fprintf(w, "\n=== %s %s regression.diffs ===\n%s", r.Key(), k, d)
			}
		}
	}
	fmt.Fprintln(w)
	passed, failed := 0, 0
	var majors []string
	for _, r := range results {
		majors = append(majors, strconv.Itoa(r.Major))
		status := "ok    "
		if r.Passed() {
			passed++
		} else {
			failed++
			status = "FAILED"
		}
		if r.Err != nil {
			fmt.Fprintf(w, "%-5s %s %-10s %s   %5.1fs\n", r.Key(), status, "", firstLine(r.Err.Error()), r.Took.Seconds())
			continue
		}
		rp, rf := r.Result.Count(suite.Regress)
		ip, iff := r.Result.Count(suite.Isolation)
		fmt.Fprintf(w, "%-5s %s PostgreSQL %-6s regress %d/%d, isolation %d/%d   %5.1fs\n",
			r.Key(), status, r.Server, rp, rp+rf, ip, ip+iff, r.Took.Seconds())
	}
	fmt.Fprintf(w, "%d passed, %d failed (PostgreSQL %s)\n", passed, failed, strings.Join(majors, ", "))
}

// JUnit turns the results into JUnit suites: one per major and suite kind,
// one case per regress test and per isolation spec, failures carrying that
// test's diff.
func JUnit(results []MajorResult) []junit.Suite {
	var out []junit.Suite
	for _, r := range results {
		for _, k := range suite.Kinds {
			s := junit.Suite{Name: r.Key() + "." + string(k)}
			if r.Err != nil && len(r.Result.Cases) == 0 {
				s.Error = r.Err.Error()
			}
			diffs := suite.SplitDiffs(r.Result.Diffs[k])
			for _, c := range r.Result.Cases {
				if c.Kind != k {
					continue
				}
				jc := junit.Case{Name: c.Name, Class: s.Name, Time: c.Duration}
				if !c.Passed {
					jc.Failure = diffs[c.Name]
					if jc.Failure == "" {
						jc.Failure = "the test failed; see the driver's output:\n" + r.Result.Output[k]
					}
				}
				s.Cases = append(s.Cases, jc)
			}
			out = append(out, s)
		}
	}
	return out
}
