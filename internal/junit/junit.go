// Package junit writes test results as JUnit XML, the report format CI
// systems (GitLab, Jenkins, GitHub test reporters) read.
package junit

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/pglease/pglease-gen/internal/render"
)

// Suite is a group of cases, e.g. the regress tests on PostgreSQL 17.
type Suite struct {
	Name  string
	Cases []Case
	// Error, when set, says the suite could not run at all.
	Error string
	// Skipped, when set, says why the suite was not run.
	Skipped string
	// Properties describe where it ran (the server's version, say), in
	// the order given.
	Properties []Property
}

// Property is one name and value of a suite's <properties>.
type Property struct{ Name, Value string }

// Case is one test.
type Case struct {
	Name    string
	Class   string
	Time    time.Duration
	Failure string // empty when the test passed
	// Error, when set, says the test did not run to its end (an
	// interrupted run): an <error>, not a pass.
	Error string
}

type xmlSuites struct {
	XMLName  xml.Name   `xml:"testsuites"`
	Tests    int        `xml:"tests,attr"`
	Failures int        `xml:"failures,attr"`
	Errors   int        `xml:"errors,attr"`
	Skipped  int        `xml:"skipped,attr"`
	Time     string     `xml:"time,attr"`
	Suites   []xmlSuite `xml:"testsuite"`
}

type xmlSuite struct {
	Name       string         `xml:"name,attr"`
	Tests      int            `xml:"tests,attr"`
	Failures   int            `xml:"failures,attr"`
	Errors     int            `xml:"errors,attr"`
	Skipped    int            `xml:"skipped,attr"`
	Time       string         `xml:"time,attr"`
	Properties *xmlProperties `xml:"properties,omitempty"`
	Cases      []xmlCase      `xml:"testcase"`
}

type xmlProperties struct {
	Property []xmlProperty `xml:"property"`
}

type xmlProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type xmlCase struct {
	Name      string      `xml:"name,attr"`
	Classname string      `xml:"classname,attr"`
	Time      string      `xml:"time,attr"`
	Failure   *xmlProblem `xml:"failure,omitempty"`
	Error     *xmlProblem `xml:"error,omitempty"`
	Skipped   *xmlProblem `xml:"skipped,omitempty"`
}

type xmlProblem struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// Write writes suites as one <testsuites> document. A suite that could not
// run becomes one case with an <error>.
func Write(w io.Writer, suites []Suite) error {
	doc := xmlSuites{}
	var total time.Duration
	for _, s := range suites {
		xs := xmlSuite{Name: s.Name}
		if len(s.Properties) > 0 {
			xs.Properties = &xmlProperties{}
			for _, p := range s.Properties {
				xs.Properties.Property = append(xs.Properties.Property, xmlProperty{p.Name, p.Value})
			}
		}
		var st time.Duration
		if s.Error != "" {
			xs.Errors++
			xs.Cases = append(xs.Cases, xmlCase{Name: "setup", Classname: s.Name, Time: seconds(0),
				Error: &xmlProblem{Message: "the suite could not run", Text: s.Error}})
		}
		if s.Skipped != "" {
			xs.Skipped++
			xs.Cases = append(xs.Cases, xmlCase{Name: "setup", Classname: s.Name, Time: seconds(0),
				Skipped: &xmlProblem{Message: s.Skipped}})
		}
		for _, c := range s.Cases {
			xc := xmlCase{Name: c.Name, Classname: c.Class, Time: seconds(c.Time)}
			if c.Failure != "" {
				xc.Failure = &xmlProblem{Message: "output differs from the expected file", Text: c.Failure}
				xs.Failures++
			}
			if c.Error != "" {
				xc.Error = &xmlProblem{Message: firstLine(c.Error), Text: c.Error}
				xs.Errors++
			}
			st += c.Time
			xs.Cases = append(xs.Cases, xc)
		}
		xs.Tests = len(xs.Cases)
		xs.Time = seconds(st)
		total += st
		doc.Tests += xs.Tests
		doc.Failures += xs.Failures
		doc.Errors += xs.Errors
		doc.Skipped += xs.Skipped
		doc.Suites = append(doc.Suites, xs)
	}
	doc.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// WriteFile writes the report to file, whole or not at all (a reader
// never sees half a report).
func WriteFile(file string, suites []Suite) error {
	var buf bytes.Buffer
	if err := Write(&buf, suites); err != nil {
		return err
	}
	dir, name := filepath.Split(file)
	if dir == "" {
		dir = "."
	}
	return render.Write(dir, render.Files{name: buf.Bytes()})
}
