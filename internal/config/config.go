// Package config reads a packager's settings for build: the release
// number, the vendor tag, the maintainer, the URLs and the image
// repository, from a small YAML file (pglease-gen.yaml, or --config) and
// from flags, each checked, and applies them to the model's packaging.
// The model keeps the defaults; nothing here is a second source of them.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/pglease/pglease-gen/internal/model"
)

// DefaultFile is the file build reads from the working directory when
// --config is not given and the file exists.
const DefaultFile = "pglease-gen.yaml"

// Example is a minimal file, as the README and build --help show it.
const Example = `# pglease-gen.yaml: a packager's settings (every key is optional)
vendor: ACME                      # the release suffix: -1ACME.el9, -1ACME~bookworm
maintainer: ACME packaging <packages@acme.example>
repo_url: https://packages.acme.example/pg_lease   # writes the host files: sign with --sign-key
image_repository: registry.acme.example/pg_lease
# release: 2                      # a rebuild: needs release_date and release_note
# release_date: 2026-12-02        #   the new changelog entry's date (after the newest)
# release_note: Rebuilt for ACME  #   its one line
# changelog: pglease-gen-changelog.yaml  # every release, newest first: build adds each new one
# homepage: https://github.com/pglease/pg_lease
# source_url: https://downloads.acme.example/pg_lease  # the directory holding the tarball
`

// Settings are what a packager may set. The zero value of a field means
// "the model's default".
type Settings struct {
	Release         int    `yaml:"release"`
	ReleaseDate     string `yaml:"release_date"`
	ReleaseNote     string `yaml:"release_note"`
	Vendor          string `yaml:"vendor"`
	Maintainer      string `yaml:"maintainer"`
	Homepage        string `yaml:"homepage"`
	SourceURL       string `yaml:"source_url"`
	RepoURL         string `yaml:"repo_url"`
	ImageRepository string `yaml:"image_repository"`
	// Changelog is the packager's changelog file (ReadChangelog), as the
	// file or --changelog names it; Log is what it holds.
	Changelog string `yaml:"changelog"`
	Log       *Log   `yaml:"-"`
	// Now is the clock a release date is checked against; zero: the
	// machine's.
	Now time.Time `yaml:"-"`
	// From says where each key's value came from, for the errors:
	// "pglease-gen.yaml:3" or "--vendor".
	From map[string]string `yaml:"-"`
}

// field is the setting of key in s.
func (s *Settings) field(key string) *string {
	switch key {
	case "release_date":
		return &s.ReleaseDate
	case "release_note":
		return &s.ReleaseNote
	case "vendor":
		return &s.Vendor
	case "maintainer":
		return &s.Maintainer
	case "homepage":
		return &s.Homepage
	case "source_url":
		return &s.SourceURL
	case "repo_url":
		return &s.RepoURL
	case "image_repository":
		return &s.ImageRepository
	case "changelog":
		return &s.Changelog
	}
	return nil
}

// ParseRelease reads a release number as the file or a flag gives it:
// digits only, from 1 to 999 (no 0, 2.5, 1e3 or 0x10, which YAML would
// read as numbers too).
func ParseRelease(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 999 || strings.TrimLeft(v, "0123456789") != "" {
		return 0, fmt.Errorf("release %q: a whole number from 1 to 999", v)
	}
	return n, nil
}

// locate prefixes err with where the setting it is about came from: its
// message starts with the key (Apply's errors all do).
func (s Settings) locate(err error) error {
	if err == nil {
		return nil
	}
	keys := slices.Clone(Keys)
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	for _, k := range keys {
		if strings.HasPrefix(err.Error(), k) && s.From[k] != "" {
			return fmt.Errorf("%s: %w", s.From[k], err)
		}
	}
	return err
}

// Keys are the file's keys, in the order the docs give them.
var Keys = []string{"release", "release_date", "release_note", "vendor", "maintainer", "homepage", "source_url", "repo_url", "image_repository", "changelog"}

// Read reads a settings file. Every key must be one of Keys, given once,
// with a scalar value; the values are checked by Apply.
func Read(path string) (Settings, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Settings{}, err
	}
	return Parse(path, b)
}

// Parse reads a settings file's bytes; name is for the errors, which
// give the file and line of the value they are about.
func Parse(name string, b []byte) (Settings, error) {
	s := Settings{From: map[string]string{}}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		return s, yamlError(name, b, err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); err != io.EOF {
		line := more.Line
		if err != nil {
			return s, fmt.Errorf("%s: %w", name, err)
		}
		return s, fmt.Errorf("%s:%d: a second YAML document (after ---): put every setting in one document", name, line)
	}
	if len(doc.Content) == 0 {
		return s, nil // empty: every default
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return s, fmt.Errorf("%s: line %d: expected keys and values (key: value), not a %s", name, m.Line, kindName(m.Kind))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if !slices.Contains(Keys, k.Value) {
			return s, fmt.Errorf("%s: line %d: unknown key %q: the keys are %s", name, k.Line, k.Value, strings.Join(Keys, ", "))
		}
		if seen[k.Value] {
			return s, fmt.Errorf("%s: line %d: %s is given twice", name, k.Line, k.Value)
		}
		seen[k.Value] = true
		if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
			return s, fmt.Errorf("%s: line %d: %s needs one value", name, v.Line, k.Value)
		}
		where := fmt.Sprintf("%s:%d", name, v.Line)
		if v.Value == "" {
			return s, fmt.Errorf("%s: %s is empty: leave the key out for its default", where, k.Value)
		}
		s.From[k.Value] = where
		if k.Value == "release" {
			n, err := ParseRelease(v.Value)
			if err != nil {
				return s, fmt.Errorf("%s: %w", where, err)
			}
			s.Release = n
			continue
		}
		*s.field(k.Value) = v.Value
	}
	return s, nil
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "single value"
	}
	return "document of another kind"
}

// Over returns s with each field that o sets replacing s's: flags over
// the file.
func (s Settings) Over(o Settings) Settings {
	pick := func(a, b string) string {
		if b != "" {
			return b
		}
		return a
	}
	if o.Release != 0 {
		s.Release = o.Release
	}
	from := map[string]string{}
	for k, v := range s.From {
		from[k] = v
	}
	for k, v := range o.From {
		from[k] = v
	}
	s.From = from
	s.ReleaseDate = pick(s.ReleaseDate, o.ReleaseDate)
	s.ReleaseNote = pick(s.ReleaseNote, o.ReleaseNote)
	s.Vendor = pick(s.Vendor, o.Vendor)
	s.Maintainer = pick(s.Maintainer, o.Maintainer)
	s.Homepage = pick(s.Homepage, o.Homepage)
	s.SourceURL = pick(s.SourceURL, o.SourceURL)
	s.RepoURL = pick(s.RepoURL, o.RepoURL)
	s.ImageRepository = pick(s.ImageRepository, o.ImageRepository)
	s.Changelog = pick(s.Changelog, o.Changelog)
	if o.Log != nil {
		s.Log = o.Log
	}
	return s
}

// Applied is the packaging a build uses once the settings are applied.
type Applied struct {
	Pkg     model.Packaging
	Images  model.ImageVolumes
	Suffix  string // the vendor tag
	RepoURL string // as given: build.ParseRepoURL checks it
	// RepoURLFrom is where RepoURL was given: file:line or --repo-url
	RepoURLFrom string
	// New is the release this build makes that the changelog does not
	// record yet (a new --release): AppendChangelog records it in
	// Changelog once the build is published.
	New       *model.Change
	Changelog string
}

var (
	vendorRE     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{0,15}$`)
	maintainerRE = regexp.MustCompile(`^[^<>@\n]*[^<>@\s] <[^<>@\s]+@[^<>@\s]+\.[^<>@\s]+>$`)
	// a registry host (with a port) and a path, as image references
	// spell them: lowercase, digits and . _ -
	imageRE = regexp.MustCompile(`^[a-z0-9]+([.-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+$`)
)

// Apply checks s and applies it to the model's packaging pkg and image
// description img for extension ext. Every error names the setting and
// says what it takes.
func Apply(s Settings, ext model.Extension, pkg model.Packaging, img model.ImageVolumes) (Applied, error) {
	a, err := apply(s, ext, pkg, img)
	return a, s.locate(err)
}

func apply(s Settings, ext model.Extension, pkg model.Packaging, img model.ImageVolumes) (Applied, error) {
	a := Applied{Pkg: pkg, Images: img, Suffix: pkg.Suffixes[0]}
	// Packaging's slices are shared with the model: copy what changes
	a.Pkg.Changelog = slices.Clone(pkg.Changelog)
	if s.Vendor != "" {
		if !vendorRE.MatchString(s.Vendor) {
			return a, fmt.Errorf("vendor %q: a letter then up to 15 letters or digits (it goes into RPM releases and Debian versions), for example PGSTY", s.Vendor)
		}
		a.Suffix = s.Vendor
		if known, err := pkg.ParseSuffix(s.Vendor); err == nil {
			a.Suffix = known // PGDG in any case is PGDG's own form
		}
	}
	if s.Maintainer != "" {
		if err := literal("maintainer", s.Maintainer, `$%\"`+"`,;"); err != nil {
			return a, err
		}
		if !maintainerRE.MatchString(s.Maintainer) {
			return a, fmt.Errorf("maintainer %q: a name and an address, as \"Name <user@example.org>\"", s.Maintainer)
		}
		a.Pkg.Maintainer = s.Maintainer
	}
	if s.Homepage != "" {
		u, err := webURL("homepage", s.Homepage)
		if err != nil {
			return a, err
		}
		a.Pkg.URL = u
	}
	if s.SourceURL != "" {
		u, err := webURL("source_url", s.SourceURL)
		if err != nil {
			return a, err
		}
		a.Pkg.SourceURL = u
	}
	a.RepoURL, a.RepoURLFrom = s.RepoURL, s.From["repo_url"] // checked by build.ParseRepoURL, as --repo-url is
	if s.ImageRepository != "" {
		if !imageRE.MatchString(s.ImageRepository) {
			return a, fmt.Errorf("image_repository %q: a registry and a path in lowercase, without a tag, for example ghcr.io/acme/pg_lease", s.ImageRepository)
		}
		a.Images.Repository = s.ImageRepository
	}
	// the model's entries are the project's own releases: they keep its
	// maintainer and suffix whoever builds; the entry of the release built
	// here (a new one, or the packaged one rebuilt under another name) is
	// the packager's
	for i := range a.Pkg.Changelog {
		c := &a.Pkg.Changelog[i]
		c.By, c.Suffix = c.Who(pkg.Maintainer), c.SuffixOr(pkg.Suffixes[0])
	}
	// the packager's own releases, from the changelog file, among the
	// project's, newest first
	if s.Log != nil {
		a.Changelog = s.Log.File
		for _, e := range s.Log.Entries {
			c := e.Change
			c.By, c.Suffix = c.Who(a.Pkg.Maintainer), a.Suffix
			a.Pkg.Changelog = append(a.Pkg.Changelog, c)
		}
		slices.SortStableFunc(a.Pkg.Changelog, func(x, y model.Change) int { return y.Time().Compare(x.Time()) })
	}
	if err := applyRelease(s, ext, &a.Pkg); err != nil {
		return a, err
	}
	if c := a.Pkg.Changelog[0]; c.Version == ext.Version() && c.Release == a.Pkg.Release && s.Log != nil &&
		!slices.ContainsFunc(s.Log.Entries, func(e Entry) bool { return e.Version == c.Version && e.Release == c.Release }) && c.Release > 1 {
		a.New = &a.Pkg.Changelog[0]
	}
	if top := &a.Pkg.Changelog[0]; top.Version == ext.Version() && top.Release == a.Pkg.Release {
		top.By, top.Suffix = a.Pkg.Maintainer, a.Suffix
	}
	return a, nil
}

// applyRelease makes release s.Release of the newest version: the
// packaging's release and a changelog entry of its own (RPM and Debian
// both record a rebuild there).
func applyRelease(s Settings, ext model.Extension, pkg *model.Packaging) error {
	// the newest release of the version built, the project's or the
	// packager's (the changelog file's)
	top := model.Change{}
	for _, c := range pkg.Changelog {
		if c.Version == ext.Version() && c.Release > top.Release {
			top = c
		}
	}
	recorded := ""
	if s.Log != nil {
		for _, e := range s.Log.Entries {
			if e.Version == top.Version && e.Release == top.Release {
				recorded = " (" + e.Where + ")"
			}
		}
	}
	if s.Release == 0 {
		if s.ReleaseDate != "" || s.ReleaseNote != "" {
			return errors.New("release_date and release_note go with release: set release to the new release number")
		}
		if top.Release > 0 {
			pkg.Release = top.Release
		}
		return nil
	}
	newest := pkg.Changelog[0]
	switch {
	case s.Release < 1 || s.Release > 999:
		return fmt.Errorf("release %d: a whole number from 1 to 999", s.Release)
	case s.Release < top.Release:
		return fmt.Errorf("release %d: %s is already at release %d%s; a release only goes up", s.Release, ext.Version(), top.Release, recorded)
	case s.Release == top.Release:
		if s.ReleaseDate != "" || s.ReleaseNote != "" {
			return fmt.Errorf("release %d is the packaged release%s: release_date and release_note are for a new one (release %d)", s.Release, recorded, top.Release+1)
		}
		pkg.Release = s.Release
		return nil
	case top.Release > 0 && s.Release > top.Release+1:
		return fmt.Errorf("release %d: %s's newest release is %d%s, so the next is %d; a skipped number reads as a release lost", s.Release, ext.Version(), top.Release, recorded, top.Release+1)
	}
	if s.ReleaseDate == "" || s.ReleaseNote == "" {
		return fmt.Errorf("release %d needs release_date (YYYY-MM-DD, or YYYY-MM-DD HH:MM) and release_note (one line): the changelogs record every release", s.Release)
	}
	c := model.Change{Date: s.ReleaseDate, Version: ext.Version(), Release: s.Release, Items: []string{s.ReleaseNote}}
	when, err := changeTime(s.ReleaseDate)
	if err != nil {
		return err
	}
	if !when.After(newest.Time()) {
		return fmt.Errorf("release_date %s: it must be after the newest changelog entry (%s)", s.ReleaseDate, newest.Date)
	}
	// a date ahead of the clock dates the repositories' files and their
	// Release (Date:) in the future, and apt refuses such a suite ("not
	// valid yet") on every host whose clock is behind it
	now := s.Now
	if now.IsZero() {
		now = time.Now()
	}
	if when.After(now) {
		return fmt.Errorf("release_date %s: it is after now (%s); the repositories would be dated in the future, and apt refuses a Release dated ahead of the host's clock: date the release today or earlier", s.ReleaseDate, now.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if strings.ContainsFunc(s.ReleaseNote, func(r rune) bool { return r < ' ' || r == 0x7f }) || len(s.ReleaseNote) > 200 || strings.TrimSpace(s.ReleaseNote) != s.ReleaseNote {
		return fmt.Errorf("release_note: one line of at most 200 characters, without leading or trailing space")
	}
	pkg.Release = s.Release
	pkg.Changelog = append([]model.Change{c}, pkg.Changelog...)
	return nil
}

func changeTime(s string) (time.Time, error) {
	for _, layout := range []string{time.DateOnly, "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("release_date %q: YYYY-MM-DD, or YYYY-MM-DD HH:MM in UTC", s)
}

// literal refuses a value holding one of bad, characters that a spec, a
// Debian control file or a Makefile would read as more than text (rpm's
// % macros and %(shell), dpkg's ${substvars}, make's $(...), the shell's
// backquotes, a field separator), naming the setting.
func literal(key, value, bad string) error {
	if i := strings.IndexAny(value, bad); i >= 0 {
		return fmt.Errorf("%s %q: holds %q, which the spec, debian/control or debian/rules would read as code or syntax; leave it out", key, value, value[i:i+1])
	}
	if strings.ContainsFunc(value, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("%s %q: holds a control character", key, value)
	}
	return nil
}

// webURL checks an http(s) URL with a host and no query or fragment, and
// drops a trailing slash.
func webURL(key, s string) (string, error) {
	if err := literal(key, s, `$%\"`+"` "); err != nil {
		return "", err
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%s %q: an http or https URL with a host and no query, for example https://packages.example.org/pg_lease", key, s)
	}
	return strings.TrimSuffix(s, "/"), nil
}
