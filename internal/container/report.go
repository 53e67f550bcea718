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
// diffs, then one summary line per major (with the container's machine and
// the server's version()) and a last line counting majors: "N passed, M
// failed, K skipped".
func Report(w io.Writer, results []MajorResult) {
	for _, r := range results {
		if r.Err != nil {
			fmt.Fprintf(w, "\n=== %s (%s) could not run the suites ===\n%v\n", r.Key(), r.Image, r.Err)
		}
		for _, k := range suite.Reported {
			if d, ok := r.Result.Diffs[k]; ok {
				fmt.Fprintf(w, "\n=== %s %s regression.diffs ===\n%s", r.Key(), k, d)
			}
		}
	}
	fmt.Fprintln(w)
	passed, failed, skipped := 0, 0, 0
	var majors []string
	for _, r := range results {
		majors = append(majors, strconv.Itoa(r.Major))
		status := "ok    "
		switch {
		case r.Skipped != "":
			skipped++
			fmt.Fprintf(w, "%-5s %s %s\n", r.Key(), "skip  ", r.Skipped)
			continue
		case r.Passed():
			passed++
		default:
			failed++
			status = "FAILED"
		}
		if r.Err != nil {
			fmt.Fprintf(w, "%-5s %s %-10s %s   %5.1fs\n", r.Key(), status, "", firstLine(r.Err.Error()), r.Took.Seconds())
			continue
		}
		rp, rf := r.Result.Count(suite.Regress)
		ip, iff := r.Result.Count(suite.Isolation)
		up, uf := r.Result.Count(suite.Update)
		fmt.Fprintf(w, "%-5s %s PostgreSQL %-6s %-8s regress %d/%d, isolation %d/%d, update %d/%d   %5.1fs   %s\n",
			r.Key(), status, r.Server, r.Machine, rp, rp+rf, ip, ip+iff, up, up+uf, r.Took.Seconds(), r.Version)
	}
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped (PostgreSQL %s)\n", passed, failed, skipped, strings.Join(majors, ", "))
}

// JUnit turns the results into JUnit suites: one per major and suite kind,
// one case per regress test and per isolation spec, failures carrying that
// test's diff.
func JUnit(results []MajorResult) []junit.Suite {
	var out []junit.Suite
	for _, r := range results {
		for _, k := range suite.Reported {
			s := junit.Suite{Name: r.Key() + "." + string(k), Skipped: r.Skipped}
			if r.Err != nil && len(r.Result.Cases) == 0 {
				s.Error = r.Err.Error()
			}
			diffs := r.Result.CaseDiffs[k]
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
