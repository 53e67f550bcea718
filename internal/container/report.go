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
	// the columns are as wide as their longest entry, so that the rows
	// line up whatever the versions are (Debian's long form included)
	serverW, machineW, countsW := 0, 0, 0
	counts := make([]string, len(results))
	for i, r := range results {
		if r.Skipped != "" || r.Err != nil {
			continue
		}
		rp, rf := r.Result.Count(suite.Regress)
		ip, iff := r.Result.Count(suite.Isolation)
		up, uf := r.Result.Count(suite.Update)
		counts[i] = fmt.Sprintf("regress %d/%d, isolation %d/%d, update %d/%d", rp, rp+rf, ip, ip+iff, up, up+uf)
		serverW = max(serverW, len("PostgreSQL "+r.Server))
		machineW = max(machineW, len(r.Machine))
		countsW = max(countsW, len(counts[i]))
	}
	passed, failed, skipped := 0, 0, 0
	var majors []string
	for i, r := range results {
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
			fmt.Fprintf(w, "%-5s %s %s   %5.1fs\n", r.Key(), status, firstLine(r.Err.Error()), r.Took.Seconds())
			continue
		}
		fmt.Fprintf(w, "%-5s %s %-*s  %-*s  %-*s  %6.1fs   %s\n",
			r.Key(), status, serverW, "PostgreSQL "+r.Server, machineW, r.Machine, countsW, counts[i], r.Took.Seconds(), r.Version)
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
			s := junit.Suite{Name: r.Key() + "." + string(k), Skipped: r.Skipped, Properties: r.properties()}
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

// properties say which build of the major the suites ran on: the image
// and what the server reported (PostgreSQL 19rc1 (Debian 19~rc1-1), say).
func (r MajorResult) properties() []junit.Property {
	var ps []junit.Property
	for _, p := range []junit.Property{
		{Name: "image", Value: r.Image}, {Name: "server_version", Value: r.Server},
		{Name: "version", Value: r.Version}, {Name: "machine", Value: r.Machine},
	} {
		if p.Value != "" {
			ps = append(ps, p)
		}
	}
	return ps
}
