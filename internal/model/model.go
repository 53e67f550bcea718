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

// Extension describes one release of the extension.
type Extension struct {
	// Name is the extension name used by CREATE EXTENSION.
	Name string
	// Version is the extension version (default_version in the control file).
	Version string
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
	Name:         "pg_lease",
	Version:      "0.1.0",
	Schema:       "lease",
	Comment:      "expiring ownership of named resources with fencing epochs",
	Majors:       []int{14, 15, 16, 17, 18},
	PollInterval: "10ms",
	MaxTextBytes: 1024,
	License:      "PostgreSQL",
}

// MinMajor is the oldest supported PostgreSQL major.
func (e Extension) MinMajor() int { return e.Majors[0] }

// MaxMajor is the newest supported PostgreSQL major.
func (e Extension) MaxMajor() int { return e.Majors[len(e.Majors)-1] }

// ScriptFile is the install script's file name, e.g. pg_lease--0.1.0.sql.
func (e Extension) ScriptFile() string { return e.Name + "--" + e.Version + ".sql" }

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

// MajorList is the supported majors as "14,15,16,17,18".
func (e Extension) MajorList() string {
	parts := make([]string, len(e.Majors))
	for i, m := range e.Majors {
		parts[i] = strconv.Itoa(m)
	}
	return strings.Join(parts, ",")
}

// PGXNLicense is the license as PGXN's META.json names it (its meta spec
// has its own short names for the common licenses).
func (e Extension) PGXNLicense() (string, error) {
	names := map[string]string{"PostgreSQL": "postgresql", "MIT": "mit", "Apache-2.0": "apache_2_0", "BSD-3-Clause": "bsd"}
	if n, ok := names[e.License]; ok {
		return n, nil
	}
	return "", fmt.Errorf("no PGXN name for the license %q: add it to model.PGXNLicense", e.License)
}
