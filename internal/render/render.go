// Package render turns the templates and the model into the extension's
// files. Rendering is pure: it returns the files as a map and writes nothing;
// Write and Diff are the separate steps that touch a directory.
package render

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"

	"github.com/pglease/pglease-gen/internal/model"
)

// Files maps a path relative to the output directory to its contents.
type Files map[string][]byte

// Names returns the paths in sorted order.
func (f Files) Names() []string {
	names := make([]string, 0, len(f))
	for n := range f {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// output pairs a template in the source tree with the file it renders.
type output struct {
	template string
	name     func(model.Extension) string
}

var outputs = []output{
	{"control/pg_lease.control.tmpl", model.Extension.ControlFile},
	{"templates/pglease.mk.tmpl", func(model.Extension) string { return "pglease.mk" }},
}

// Data is what every template sees, the extension's files and the
// packaging alike (dist.NewData fills the packaging part).
type Data struct {
	Ext         model.Extension
	Pkg         model.Packaging
	Source      string // the template's path, for the "rendered from" header
	Summary     string
	Description string
	At          string   // the version an install or update script is rendered for
	Suffix      string   // release suffix, e.g. PGSTY
	Files       []string // the extension's files, sorted
	Tests       map[string][]string
	LicenseText string // the LICENSE file
	// Major is the one major a file is rendered for (the spec in that
	// major's source RPM); 0 for a file that serves every major
	Major int
}

// Render renders one template with d, its Source set to the template.
func (d Data) Render(src fs.FS, tmpl string) ([]byte, error) {
	d.Source = tmpl
	return Template(src, tmpl, d)
}

// FuncMap is sprig's hermetic functions (no clock, randomness or
// environment) plus the project's own helpers.
func FuncMap() template.FuncMap {
	fm := sprig.HermeticTxtFuncMap()
	fm["quoteLiteral"] = QuoteLiteral
	fm["changelogDate"] = ChangelogDate
	fm["debianDate"] = DebianDate
	fm["debianText"] = DebianText
	fm["rpmEscape"] = RPMEscape
	fm["bullets"] = func(items []string, first, cont string) []string { return model.Bullets(items, first, cont, 80) }
	return fm
}

// RPMEscape makes s literal in a spec: rpm expands every % (macros, and
// %(...) runs the shell), so each is doubled, which rpm reads back as one.
func RPMEscape(s string) string { return strings.ReplaceAll(s, "%", "%%") }

// QuoteLiteral quotes s as an SQL string literal, as quote_literal() does
// for strings without backslashes. Strings with backslashes are refused,
// since their meaning depends on standard_conforming_strings.
func QuoteLiteral(s string) (string, error) {
	if strings.Contains(s, `\`) {
		return "", fmt.Errorf("quoteLiteral: %q contains a backslash", s)
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'", nil
}

// ChangelogDate turns 2026-11-29 (or 2026-11-29 20:00) into an RPM
// changelog date, Sun Nov 29 2026.
func ChangelogDate(date string) (string, error) {
	t, _, err := changeDate(date)
	if err != nil {
		return "", fmt.Errorf("changelogDate: %w", err)
	}
	return t.Format("Mon Jan 02 2006"), nil
}

// DebianDate turns 2026-11-29 into a Debian changelog date at midnight
// UTC, as RFC 5322 writes it: Sun, 29 Nov 2026 00:00:00 +0000, the time
// the build's SOURCE_DATE_EPOCH, the Release's Date: and the RPMs'
// BUILDTIME give the same entry (a release dated today, built this
// morning, dated nothing in the future); 2026-11-29 20:00, a second
// release on one day, at that time. (RPM changelogs hold days only.)
func DebianDate(date string) (string, error) {
	t, _, err := changeDate(date)
	if err != nil {
		return "", fmt.Errorf("debianDate: %w", err)
	}
	return t.Format("Mon, 02 Jan 2006 15:04:05 -0700"), nil
}

// changeDate parses a changelog entry's date (model.Change.Date): a day,
// or a day and a time (UTC), which it reports.
func changeDate(date string) (time.Time, bool, error) {
	if t, err := time.Parse(time.DateOnly, date); err == nil {
		return t, false, nil
	}
	t, err := time.Parse("2006-01-02 15:04", date)
	return t, true, err
}

// DebianText formats text as a Debian control file's continuation lines:
// each line indented by one space, an empty line as " .".
func DebianText(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			lines[i] = " ."
		} else {
			lines[i] = " " + l
		}
	}
	return strings.Join(lines, "\n")
}

// InstallFiles are the rendered files CREATE EXTENSION and ALTER
// EXTENSION UPDATE read: the control file and every script.
func InstallFiles(ext model.Extension, src fs.FS) (Files, error) {
	files, err := Extension(ext, src)
	if err != nil {
		return nil, err
	}
	out := Files{ext.ControlFile(): files[ext.ControlFile()]}
	for _, s := range ext.Scripts() {
		out[s] = files[s]
	}
	return out, nil
}

// ScriptTemplate renders the install script of every version not yet
// released; UpdateTemplate is the update script into such a version from
// the one before, which shares the install script's named blocks (so that
// what an update creates is what a fresh install creates). ReleasedDir
// holds the frozen scripts of the released versions.
const (
	ScriptTemplate = "templates/pg_lease.sql.tmpl"
	ReleasedDir    = "templates/released"
)

// UpdateTemplate is the template of the update script from a to b.
func UpdateTemplate(ext model.Extension, a, b string) string {
	return "templates/" + ext.UpdateScript(a, b) + ".tmpl"
}

// Extension renders the install and update scripts, the control file and
// the make fragment for ext from the templates in src. A released
// version's scripts (its install script, and the update script into it)
// are files, not renderings: they are taken from their frozen copies in
// ReleasedDir, so that the templates describe only what is being made
// (without a conditional per version for every change since).
func Extension(ext model.Extension, src fs.FS) (Files, error) {
	files := Files{}
	for i, v := range ext.Versions {
		d := Data{Ext: ext, Pkg: model.Packages, At: v.Number, Source: ScriptTemplate}
		var update string // the update script into v, if any
		if i > 0 {
			update = ext.UpdateScript(ext.Versions[i-1].Number, v.Number)
		}
		if v.Released {
			names := []string{ext.InstallScript(v.Number), update}
			for _, from := range v.DirectFrom {
				names = append(names, ext.UpdateScript(from, v.Number))
			}
			for _, name := range names {
				if name == "" {
					continue
				}
				frozen, err := fs.ReadFile(src, ReleasedDir+"/"+name)
				if err != nil {
					return nil, fmt.Errorf("%s is released, but its frozen copy is missing: %w", name, err)
				}
				files[name] = frozen
			}
			continue
		}
		b, err := TemplateSet(src, d, ScriptTemplate)
		if err != nil {
			return nil, err
		}
		files[ext.InstallScript(v.Number)] = b
		if update != "" {
			tmpl := UpdateTemplate(ext, ext.Versions[i-1].Number, v.Number)
			d.Source = tmpl
			if files[update], err = TemplateSet(src, d, ScriptTemplate, tmpl); err != nil {
				return nil, err
			}
		}
		for _, from := range v.DirectFrom {
			tmpl := UpdateTemplate(ext, from, v.Number)
			d.Source = tmpl
			if files[ext.UpdateScript(from, v.Number)], err = TemplateSet(src, d, ScriptTemplate, tmpl); err != nil {
				return nil, err
			}
		}
	}
	for _, o := range outputs {
		b, err := Data{Ext: ext, Pkg: model.Packages}.Render(src, o.template)
		if err != nil {
			return nil, err
		}
		files[o.name(ext)] = b
	}
	return files, nil
}

// TemplateSet parses the template files together (the later ones may use
// the named blocks of the earlier ones) and renders the last with d.
func TemplateSet(src fs.FS, d any, paths ...string) ([]byte, error) {
	var t *template.Template
	for _, p := range paths {
		text, err := fs.ReadFile(src, p)
		if err != nil {
			return nil, fmt.Errorf("read template: %w", err)
		}
		if t == nil {
			t = template.New(p).Option("missingkey=error").Funcs(FuncMap())
		} else {
			t = t.New(p)
		}
		if _, err := t.Parse(string(text)); err != nil {
			return nil, fmt.Errorf("parse template %s: %w", p, err)
		}
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		return nil, fmt.Errorf("render template %s: %w", t.Name(), err)
	}
	return buf.Bytes(), nil
}

// Block renders the block name that the template file path defines, with
// d: for a test that edits a rendered script to find a fragment of it.
func Block(src fs.FS, path, name string, d any) (string, error) {
	t, err := parse(src, path)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, d); err != nil {
		return "", fmt.Errorf("render block %s of %s: %w", name, path, err)
	}
	return buf.String(), nil
}

// Template renders one template file from src with the given data.
func Template(src fs.FS, path string, d any) ([]byte, error) {
	t, err := parse(src, path)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		return nil, fmt.Errorf("render template %s: %w", path, err)
	}
	return buf.Bytes(), nil
}

func parse(src fs.FS, path string) (*template.Template, error) {
	text, err := fs.ReadFile(src, path)
	if err != nil {
		return nil, fmt.Errorf("read template: %w", err)
	}
	t, err := template.New(path).Option("missingkey=error").Funcs(FuncMap()).Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("parse template %s: %w", path, err)
	}
	return t, nil
}

// Write writes files below dir in sorted order, creating directories as
// needed. Each file is written to a temporary name and renamed into place,
// so a reader never sees a half-written file.
func Write(dir string, files Files) error {
	for _, name := range files.Names() {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		if err := WriteAtomic(path, files[name], 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

// Stale is a file that dir lacks or holds with other bytes.
type Stale struct {
	Name    string
	Missing bool
}

// Diff compares files with what dir holds and returns those that are
// missing or differ, sorted by name.
func Diff(dir string, files Files) ([]Stale, error) {
	var stale []Stale
	for _, name := range files.Names() {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if errors.Is(err, fs.ErrNotExist) {
			stale = append(stale, Stale{Name: name, Missing: true})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("diff: %w", err)
		}
		if !bytes.Equal(got, files[name]) {
			stale = append(stale, Stale{Name: name})
		}
	}
	return stale, nil
}

// Stray are the files in dir that look like ext's (its install and
// update scripts, its control file) but are not among files: a script of
// a version the model no longer has, which PostgreSQL would still offer.
func Stray(dir string, ext model.Extension, files Files) ([]string, error) {
	var out []string
	for _, pat := range []string{ext.Name + "--*.sql", ext.ControlFile()} {
		matches, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, err
		}
		for _, m := range matches {
			if _, ok := files[filepath.Base(m)]; !ok {
				out = append(out, filepath.Base(m))
			}
		}
	}
	return out, nil
}

// WriteAtomic writes b to a temporary file beside path and renames it into
// place, with mode: a reader of path sees the old bytes or the new, never
// part of them.
func WriteAtomic(path string, b []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(f.Name(), mode)); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
