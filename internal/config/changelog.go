package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/pglease/pglease-gen/internal/model"
)

// ChangelogFile is the packager's changelog build reads from the working
// directory when the settings name none, and where a new release is
// recorded.
const ChangelogFile = "pglease-gen-changelog.yaml"

// changelogHeader starts a changelog build writes.
const changelogHeader = `# The packager's releases of pg_lease, newest first: build renders them,
# after the project's own, into the RPM and Debian changelogs. A build
# with a new --release, --release-date and --release-note adds its entry.
`

// Entry is a packager's release as the changelog file records it, with
// where.
type Entry struct {
	model.Change
	Where string // file:line
}

// Log is a packager's changelog: its file and its entries, newest first.
type Log struct {
	File    string
	Entries []Entry
}

// ReadChangelog reads the changelog file; a file that does not exist is
// an empty changelog (the first new release creates it).
func ReadChangelog(file string, ext model.Extension, pkg model.Packaging, now time.Time) (Log, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return Log{File: file}, nil
	}
	if err != nil {
		return Log{}, err
	}
	return ParseChangelog(file, b, ext, pkg, now)
}

// ParseChangelog reads and checks a changelog's bytes: a YAML list of
// entries (version, release, date, items and optionally by), newest
// first. Each entry is a release after the project's own (2 or more) of
// one of ext's versions, dated after that version's release and not after
// now, later than the entry below it; a version's releases go 2, 3, … with
// none missing. Errors give the file and line.
func ParseChangelog(name string, b []byte, ext model.Extension, pkg model.Packaging, now time.Time) (Log, error) {
	log := Log{File: name}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		return log, yamlError(name, b, err)
	}
	if len(doc.Content) == 0 {
		return log, nil
	}
	list := doc.Content[0]
	if list.Kind != yaml.SequenceNode {
		return log, fmt.Errorf("%s:%d: expected a list of releases (- version: …), not a %s", name, list.Line, kindName(list.Kind))
	}
	for _, n := range list.Content {
		where := fmt.Sprintf("%s:%d", name, n.Line)
		if n.Kind != yaml.MappingNode {
			return log, fmt.Errorf("%s: a release is version, release, date and items (key: value)", where)
		}
		e := Entry{Where: where}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			at := fmt.Sprintf("%s:%d", name, k.Line)
			if seen[k.Value] {
				return log, fmt.Errorf("%s: %s is given twice", at, k.Value)
			}
			seen[k.Value] = true
			if k.Value == "items" {
				if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
					return log, fmt.Errorf("%s: items is a list of one or more lines (- text)", at)
				}
				for _, it := range v.Content {
					if it.Kind != yaml.ScalarNode || strings.TrimSpace(it.Value) == "" || strings.ContainsFunc(it.Value, func(r rune) bool { return r < ' ' || r == 0x7f }) {
						return log, fmt.Errorf("%s:%d: an item is one line of text", name, it.Line)
					}
					e.Items = append(e.Items, it.Value)
				}
				continue
			}
			if v.Kind != yaml.ScalarNode || v.Value == "" {
				return log, fmt.Errorf("%s: %s needs one value", at, k.Value)
			}
			switch k.Value {
			case "version":
				e.Version = v.Value
			case "release":
				r, err := ParseRelease(v.Value)
				if err != nil {
					return log, fmt.Errorf("%s: %w", at, err)
				}
				e.Release = r
			case "date":
				if _, err := changeTime(v.Value); err != nil {
					return log, fmt.Errorf("%s: %w", at, err)
				}
				e.Date = v.Value
			case "by":
				if !maintainerRE.MatchString(v.Value) {
					return log, fmt.Errorf("%s: by %q: a name and an address, as \"Name <user@example.org>\"", at, v.Value)
				}
				e.By = v.Value
			default:
				return log, fmt.Errorf("%s: unknown key %q: a release has version, release, date, items and by", at, k.Value)
			}
		}
		for _, k := range []string{"version", "release", "date", "items"} {
			if !seen[k] {
				return log, fmt.Errorf("%s: the release has no %s", where, k)
			}
		}
		if err := checkEntry(e, log.Entries, ext, pkg, now); err != nil {
			return log, fmt.Errorf("%s: %w", where, err)
		}
		log.Entries = append(log.Entries, e)
	}
	// a version's releases go 2, 3, …: none missing
	for _, v := range ext.Versions {
		var rs []Entry
		for _, e := range log.Entries {
			if e.Version == v.Number {
				rs = append(rs, e)
			}
		}
		for i := range rs { // newest first: the last is release 2
			if want := len(rs) + 1 - i; rs[i].Release != want {
				return log, fmt.Errorf("%s: release %d of %s follows release %d: release %d is missing (a changelog keeps every release published)",
					rs[i].Where, rs[i].Release, v.Number, releaseBelow(rs, i), rs[i].Release-1)
			}
		}
	}
	return log, nil
}

// releaseBelow is the release under entry i (the project's 1 under the
// last).
func releaseBelow(rs []Entry, i int) int {
	if i+1 < len(rs) {
		return rs[i+1].Release
	}
	return 1
}

// checkEntry checks e against the model and the entries above it.
func checkEntry(e Entry, above []Entry, ext model.Extension, pkg model.Packaging, now time.Time) error {
	if !slices.ContainsFunc(ext.Versions, func(v model.Version) bool { return v.Number == e.Version }) {
		return fmt.Errorf("version %s: not a version of %s (%s is the newest)", e.Version, ext.Name, ext.Version())
	}
	var first *model.Change
	for i, c := range pkg.Changelog {
		if c.Version == e.Version && (first == nil || c.Release < first.Release) {
			first = &pkg.Changelog[i]
		}
	}
	when := e.Time()
	switch {
	case first != nil && e.Release <= first.Release:
		return fmt.Errorf("release %d of %s is the project's own; a packager's releases start at %d", e.Release, e.Version, first.Release+1)
	case first != nil && !when.After(first.Time()):
		return fmt.Errorf("date %s: not after %s's release (%s)", e.Date, e.Version, first.Date)
	case when.After(now):
		return fmt.Errorf("date %s: after now (%s)", e.Date, now.UTC().Format("2006-01-02 15:04 UTC"))
	}
	for _, a := range above {
		switch {
		case a.Version == e.Version && a.Release == e.Release:
			return fmt.Errorf("release %d of %s is also at %s: a release is published once", e.Release, e.Version, a.Where)
		case !a.Time().After(when):
			return fmt.Errorf("date %s: not before the release above it (%s, %s): newest first", e.Date, a.Date, a.Where)
		}
	}
	return nil
}

// AppendChangelog records c, a release just built, at the top of the
// changelog file (made when missing), leaving the rest of the file as it
// was; the file is replaced whole, never half-written.
func AppendChangelog(file string, c model.Change) error {
	entry := struct {
		Version string   `yaml:"version"`
		Release int      `yaml:"release"`
		Date    string   `yaml:"date"`
		By      string   `yaml:"by,omitempty"`
		Items   []string `yaml:"items"`
	}{c.Version, c.Release, c.Date, c.By, c.Items}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode([]any{entry}); err != nil {
		return err
	}
	old, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if len(old) == 0 {
		old = []byte(changelogHeader)
	}
	// before the first entry: after the comments that head the file
	lines := strings.SplitAfter(string(old), "\n")
	at := len(lines)
	for i, l := range lines {
		if strings.HasPrefix(l, "-") {
			at = i
			break
		}
	}
	out := strings.Join(lines[:at], "") + buf.String() + strings.Join(lines[at:], "")
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".new-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(out); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// yamlError is a YAML syntax error as file:line: what, the line found
// when the parser's message gives none, and a hint for the commonest
// cause.
func yamlError(name string, b []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if _, e := fmt.Sscanf(n, "%d", &line); e == nil {
				msg = after
			}
		}
	}
	if line == 0 {
		// the first prefix of the file that fails to parse ends there
		lines := strings.SplitAfter(string(b), "\n")
		for k := 1; k <= len(lines); k++ {
			var n yaml.Node
			if e := yaml.Unmarshal([]byte(strings.Join(lines[:k], "")), &n); e != nil {
				line = k
				break
			}
		}
	}
	switch {
	case strings.Contains(msg, "cannot start any token"):
		msg += ` (a value that starts with @, a backquote or % needs quotes: key: "value")`
	case strings.Contains(msg, "tab character"):
		msg += " (indent with spaces)"
	}
	if line == 0 {
		return fmt.Errorf("%s: %s", name, msg)
	}
	return fmt.Errorf("%s:%d: %s", name, line, msg)
}
