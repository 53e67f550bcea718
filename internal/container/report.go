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
	if n, of, interrupted := unfinished(results); n > 0 {
		word := "did not finish"
		if interrupted {
			word = "did not finish: the run was interrupted"
		}
		fmt.Fprintf(w, "%d of %d checks %s\n", n, of, word)
	}
}

// unfinished counts the planned checks without a result, of how many, and
// whether a run was interrupted.
func unfinished(results []MajorResult) (n, of int, interrupted bool) {
	for _, r := range results {
		if r.Skipped != "" {
			continue
		}
		n += len(r.Unfinished())
		of += len(r.Planned)
		interrupted = interrupted || r.Interrupted()
	}
	return n, of, interrupted
}

// Interrupted says, for a run that was interrupted, how many of its checks
// did not finish ("interrupted: 97 of 142 checks did not finish"); "" for
// a run that was not.
func Interrupted(results []MajorResult) string {
	n, of, interrupted := unfinished(results)
	if !interrupted {
		return ""
	}
	return fmt.Sprintf("interrupted: %d of %d checks did not finish", n, of)
}

// JUnit turns the results into JUnit suites: one per major and suite kind,
// one case per regress test and per isolation spec, failures carrying that
// test's diff.
func JUnit(results []MajorResult) []junit.Suite {
	var out []junit.Suite
	for _, r := range results {
		var unfinished []suite.Case
		if r.Skipped == "" {
			unfinished = r.Unfinished()
		}
		why := r.unfinishedWhy()
		for _, k := range suite.Reported {
			s := junit.Suite{Name: r.Key() + "." + string(k), Skipped: r.Skipped, Properties: r.properties()}
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
			// every planned check without a result is an error, so that a
			// run cut short cannot read as a smaller green one
			for _, c := range unfinished {
				if c.Kind == k {
					s.Cases = append(s.Cases, junit.Case{Name: c.Name, Class: s.Name, Error: why})
				}
			}
			// a run that failed after its last check still reads as failed
			if r.Err != nil && len(unfinished) == 0 && k == suite.Reported[0] {
				s.Error = r.Err.Error()
			}
			out = append(out, s)
		}
	}
	return out
}

// unfinishedWhy says why r's unfinished checks have no result.
func (r MajorResult) unfinishedWhy() string {
	switch {
	case r.Err == nil:
		return "did not finish"
	case r.Interrupted():
		return "interrupted before this check finished: " + firstLine(r.Err.Error())
	}
	return "did not finish: " + firstLine(r.Err.Error())
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

// Summary is a run's results as test --json prints them: every planned
// check of every major with its status, so that a pipeline reading it
// sees a check that did not finish as one ("error"), never as absent.
type Summary struct {
	Passed      int            `json:"passed"` // majors
	Failed      int            `json:"failed"`
	Skipped     int            `json:"skipped"`
	Checks      int            `json:"checks"`     // planned, in the majors that ran
	Unfinished  int            `json:"unfinished"` // of those, without a result
	Interrupted bool           `json:"interrupted"`
	Message     string         `json:"message,omitempty"` // "interrupted: 16 of 25 checks did not finish"
	Majors      []SummaryMajor `json:"majors"`
}

// SummaryMajor is one major's part of a Summary.
type SummaryMajor struct {
	Major  int            `json:"major"`
	Image  string         `json:"image"`
	Server string         `json:"server,omitempty"`
	Status string         `json:"status"` // passed, failed, skipped
	Error  string         `json:"error,omitempty"`
	Checks []SummaryCheck `json:"checks"`
}

// SummaryCheck is one check: passed, failed, or error (it did not finish).
type SummaryCheck struct {
	Kind    string  `json:"kind"` // regress, isolation, update
	Name    string  `json:"name"`
	Status  string  `json:"status"`
	Seconds float64 `json:"seconds"`
}

// Summarize is results as a Summary.
func Summarize(results []MajorResult) Summary {
	var s Summary
	s.Unfinished, s.Checks, s.Interrupted = unfinished(results)
	s.Message = Interrupted(results)
	for _, r := range results {
		m := SummaryMajor{Major: r.Major, Image: r.Image, Server: r.Server, Checks: []SummaryCheck{}}
		switch {
		case r.Skipped != "":
			s.Skipped++
			m.Status, m.Error = "skipped", r.Skipped
			s.Majors = append(s.Majors, m)
			continue
		case r.Passed():
			s.Passed++
			m.Status = "passed"
		default:
			s.Failed++
			m.Status = "failed"
		}
		if r.Err != nil {
			m.Error = r.Err.Error()
		}
		for _, c := range r.Result.Cases {
			st := "passed"
			if !c.Passed {
				st = "failed"
			}
			m.Checks = append(m.Checks, SummaryCheck{Kind: string(c.Kind), Name: c.Name, Status: st, Seconds: c.Duration.Seconds()})
		}
		for _, c := range r.Unfinished() {
			m.Checks = append(m.Checks, SummaryCheck{Kind: string(c.Kind), Name: c.Name, Status: "error"})
		}
		s.Majors = append(s.Majors, m)
	}
	return s
}
