package runner

import (
	"bytes"
	"cmp"
	"fmt"
	"io/fs"
	"path"
	"regexp"

	"github.com/pglease/pglease-gen/internal/docker"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/suite"
)

// A Pass is one run of both suites against the extension as one version,
// or one update, leaves it. Every test creates the extension with the one
// line `CREATE EXTENSION pg_lease;`; a pass rewrites that line, in the
// tests and in their expected output, to create the version it is about.
type Pass struct {
	// Name is the version ("0.1.0"), or the update ("0.1.0-0.2.0"); ""
	// for the newest version as CREATE EXTENSION installs it by default.
	Name   string
	Tests  map[suite.Kind][]string
	Suites []byte // tar of regress/ and isolation/ for this pass
}

// dir is the pass's own directory on the target, beside the others'.
func (p Pass) dir() string { return cmp.Or(p.Name, "newest") }

// CaseSuffix is what the pass adds to its test names: "@0.1.0".
func (p Pass) CaseSuffix() string {
	if p.Name == "" {
		return ""
	}
	return "@" + p.Name
}

// sinceLine marks a test that needs a version newer than the first: its
// first line is "-- since pg_lease 0.2.0" (a regress test) or "# since
// pg_lease 0.2.0" (an isolation spec).
var sinceLine = regexp.MustCompile(`^(?:--|#) since pg_lease (\S+)\n`)

// Passes plans the suites for ext: first the newest version as installed
// by default; each older version, created with VERSION, with the tests that
// existed then; and each older version updated to the newest with ALTER
// EXTENSION ... UPDATE, with every test of the newest. A version's own
// expected output, where it differs from the newest's, is in
// expected/VERSION/ next to the newest's.
func Passes(ext model.Extension, src fs.FS) ([]Pass, error) {
	create := "CREATE EXTENSION " + ext.Name + ";"
	all, err := suite.AllTests(src)
	if err != nil {
		return nil, err
	}
	newest := ext.Version()
	// each pass: its name, the version whose tests and expected output it
	// runs, and what it creates the extension with
	type plan struct{ name, version, create string }
	plans := []plan{{"", newest, create}}
	older := ext.Versions[:len(ext.Versions)-1]
	for _, v := range older {
		plans = append(plans, plan{v.Number, v.Number, fmt.Sprintf("CREATE EXTENSION %s VERSION '%s';", ext.Name, v.Number)})
	}
	for _, v := range older {
		plans = append(plans, plan{v.Number + "-" + newest, newest,
			fmt.Sprintf("CREATE EXTENSION %s VERSION '%s'; ALTER EXTENSION %s UPDATE;", ext.Name, v.Number, ext.Name)})
	}
	passes := make([]Pass, len(plans))
	for i, pl := range plans {
		p := &passes[i]
		p.Name = pl.name
		version, replace := pl.version, pl.create
		p.Tests = map[suite.Kind][]string{}
		var t docker.Tar
		for _, k := range suite.Kinds {
			if err := t.Dir(string(k), 0o755); err != nil {
				return nil, err
			}
			dir, ext := k.TestDir()
			for _, sub := range []string{dir, "expected"} {
				if err := t.Dir(path.Join(string(k), sub), 0o755); err != nil {
					return nil, err
				}
			}
			for _, name := range all[k] {
				test, err := fs.ReadFile(src, path.Join(string(k), dir, name+ext))
				if err != nil {
					return nil, err
				}
				if m := sinceLine.FindSubmatch(test); m != nil && model.VersionLess(version, string(m[1])) {
					continue
				}
				expected, err := fs.ReadFile(src, path.Join(string(k), "expected", version, name+".out"))
				if err != nil {
					expected, err = fs.ReadFile(src, path.Join(string(k), "expected", name+".out"))
				}
				if err != nil {
					return nil, fmt.Errorf("%s test %s has no expected output: %w", k, name, err)
				}
				if bytes.Count(test, []byte(create)) != 1 {
					return nil, fmt.Errorf("%s test %s must create the extension with exactly one %q", k, name, create)
				}
				for _, f := range []struct {
					name string
					b    []byte
				}{{path.Join(string(k), dir, name+ext), test}, {path.Join(string(k), "expected", name+".out"), expected}} {
					if err := t.File(f.name, 0o644, bytes.Replace(f.b, []byte(create), []byte(replace), 1)); err != nil {
						return nil, err
					}
				}
				p.Tests[k] = append(p.Tests[k], name)
			}
			if len(p.Tests[k]) == 0 {
				return nil, fmt.Errorf("version %s has no %s tests", version, k)
			}
		}
		if p.Suites, err = t.Bytes(); err != nil {
			return nil, err
		}
	}
	return passes, nil
}

// Count is how many cases of each kind a run of passes and updates has.
func Count(passes []Pass, updates []Update) map[suite.Kind]int {
	n := map[suite.Kind]int{suite.Update: len(updates)}
	for _, p := range passes {
		for k, tests := range p.Tests {
			n[k] += len(tests)
		}
	}
	return n
}

// Planned lists every check that passes and updates will report, by kind
// and name, none passed: what a run that did not finish still owes.
func Planned(passes []Pass, updates []Update) []suite.Case {
	var cases []suite.Case
	for _, p := range passes {
		for _, k := range suite.Kinds {
			for _, t := range p.Tests[k] {
				cases = append(cases, suite.Case{Kind: k, Name: t + p.CaseSuffix()})
			}
		}
	}
	for _, u := range updates {
		cases = append(cases, suite.Case{Kind: suite.Update, Name: u.CaseName()})
	}
	return cases
}
