// Package model holds the facts about pg_lease that everything else renders
// from: the extension's name, version and schema, the PostgreSQL majors it
// supports and the file names derived from them. Nothing else in the
// repository states these facts again.
package model

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Extension describes the extension across its versions.
type Extension struct {
	// Name is the extension name used by CREATE EXTENSION.
	Name string
	// Versions are the extension's versions, oldest first; the last is
	// the default_version. Each has a complete install script, and each
	// step from one to the next an update script. A released version's
	// install script is frozen (render takes it, and the update script into
	// it, from its frozen copy in templates/released).
	Versions []Version
	// Schema is the fixed, non-relocatable schema the extension lives in.
	Schema string
	// Comment is the one-line description in the control file and packages.
	Comment string
	// Majors lists the supported PostgreSQL major versions, ascending.
	Majors []int
	// PollInterval is the default of the lease.poll_interval setting.
	PollInterval string
	// MaxTextBytes is the longest name or owner accepted, in bytes.
	MaxTextBytes int
	// License is the SPDX identifier of the license.
	License string
}

// PgLease is the one description of pg_lease that the tool renders from.
var PgLease = Extension{
	Name: "pg_lease",
	Versions: []Version{
		{Number: "0.1.0", Released: true},
		{Number: "0.2.0", Released: true},
		{Number: "0.3.0", Released: true},
		// 0.2.0 updates straight to 0.4.0 too: the step through 0.3.0
		// refuses an epoch above 2^32, which 0.4.0 takes.
		{Number: "0.4.0", Released: true, DirectFrom: []string{"0.2.0"}},
		{Number: "0.5.0", Released: true},
		{Number: "0.5.1"},
	},
	Schema:       "lease",
	Comment:      "expiring ownership of named resources with fencing epochs",
	Majors:       []int{14, 15, 16, 17, 18, 19},
	PollInterval: "10ms",
	MaxTextBytes: 1024,
	License:      "PostgreSQL",
}

// MinMajor is the oldest supported PostgreSQL major.
func (e Extension) MinMajor() int { return e.Majors[0] }

// MaxMajor is the newest supported PostgreSQL major.
func (e Extension) MaxMajor() int { return e.Majors[len(e.Majors)-1] }

// Version is one version of the extension.
type Version struct {
	Number   string
	Released bool // its install script is frozen
	// DirectFrom are older versions (before the previous one) with an
	// update script straight into this one, beside the step from the
	// previous version; PostgreSQL takes the shortest path.
	DirectFrom []string
}

// VersionLess reports whether version a (dotted numbers, 0.10.0 after
// 0.9.0) comes before b.
func VersionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, _ := strconv.Atoi(as[i])
		y, _ := strconv.Atoi(bs[i])
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}

// Version is the newest version, the control file's default_version and
// the packages' version.
func (e Extension) Version() string { return e.Versions[len(e.Versions)-1].Number }

// At is the extension as it was at version v: its versions up to v. The
// suites of v run against it, and its control file's default is v.
func (e Extension) At(v string) (Extension, error) {
	for i, ver := range e.Versions {
		if ver.Number == v {
			e.Versions = slices.Clone(e.Versions[:i+1])
			return e, nil
		}
	}
	return e, fmt.Errorf("%s has no version %q", e.Name, v)
}

// ScriptFile is the newest version's install script, e.g. pg_lease--0.4.0.sql.
func (e Extension) ScriptFile() string { return e.InstallScript(e.Version()) }

// InstallScript is the install script of version v.
func (e Extension) InstallScript(v string) string { return e.Name + "--" + v + ".sql" }

// UpdateScript is the update script from version a to b.
func (e Extension) UpdateScript(a, b string) string { return e.Name + "--" + a + "--" + b + ".sql" }

// Scripts are every install and update script, in version order.
func (e Extension) Scripts() []string {
	var out []string
	for i, v := range e.Versions {
		out = append(out, e.InstallScript(v.Number))
		if i > 0 {
			out = append(out, e.UpdateScript(e.Versions[i-1].Number, v.Number))
		}
		for _, from := range v.DirectFrom {
			out = append(out, e.UpdateScript(from, v.Number))
		}
	}
	return out
}

// ControlFile is the control file's name, e.g. pg_lease.control.
func (e Extension) ControlFile() string { return e.Name + ".control" }

// Supports reports whether major is one of the supported majors.
func (e Extension) Supports(major int) bool { return slices.Contains(e.Majors, major) }

// ParseMajors turns "17", "14,16" or "all" into a sorted, de-duplicated list
// of supported majors. Anything else is an error that names the valid choices.
func (e Extension) ParseMajors(spec string) ([]int, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("no PostgreSQL major given: use one of %s or all", e.MajorList())
	}
	if spec == "all" {
		return slices.Clone(e.Majors), nil
	}
	var out []int
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		n, err := strconv.Atoi(part)
		if err != nil || !e.Supports(n) {
			return nil, fmt.Errorf("unsupported PostgreSQL major %q: use one of %s or all", part, e.MajorList())
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// MajorList is the supported majors as "14,15,16,17,18,19".
func (e Extension) MajorList() string {
	parts := make([]string, len(e.Majors))
	for i, m := range e.Majors {
		parts[i] = strconv.Itoa(m)
	}
	return strings.Join(parts, ",")
}

// MajorRange is the supported majors as "14-19".
func (e Extension) MajorRange() string { return fmt.Sprintf("%d-%d", e.MinMajor(), e.MaxMajor()) }

// PGXNLicense is the license as PGXN's META.json names it (its meta spec
// has its own short names for the common licenses).
func (e Extension) PGXNLicense() (string, error) {
	names := map[string]string{"PostgreSQL": "postgresql", "MIT": "mit", "Apache-2.0": "apache_2_0", "BSD-3-Clause": "bsd"}
	if n, ok := names[e.License]; ok {
		return n, nil
	}
	return "", fmt.Errorf("no PGXN name for the license %q: add it to model.PGXNLicense", e.License)
}
