package model

import (
	"fmt"
	"slices"
	"strings"
)

// Package formats.
const (
	RPM = "rpm"
	Deb = "deb"
)

// Distro is one distribution the packages are built for: an EL release
// (its RPMs carry its dist tag and get their own repository trees) or a
// Debian or Ubuntu release (its debs carry its codename in their version
// and get their own suite of the one apt repository). Every distribution
// gets both architectures (Arches, DebArches).
type Distro struct {
	// Name is what --distro takes: the dist tag without its dot (el9) or
	// the codename (bookworm).
	Name   string
	Format string // RPM or Deb
	OS     string // EL, Debian, Ubuntu
	// Version is the release's number: 9, 12, 22.04.
	Version string
	// PGDG is the release's tag in PGDG's deb versions (0.3.0-1.pgdg120+1
	// on Debian 12, 0.3.0-1.pgdg22.04+1 on Ubuntu 22.04).
	PGDG string
	// Majors are the PostgreSQL majors it gets; nil: every supported one.
	Majors []int
}

// Distros are the distributions pglease-gen builds for, Pigsty's: EL8-10,
// Debian 12 and 13, Ubuntu 22.04, 24.04 and 26.04. EL8 stops at
// PostgreSQL 18: PGDG publishes no PostgreSQL 19 server for EL8, so a
// pg_lease_19 there could not be installed. Pigsty's pig (its
// cli/repo/assets/repo.yml, checked 2026-12) lists PGDG's 19 testing
// repository for EL 8, 9 and 10 alike, but on EL8 that repository holds
// no postgresql19-server, and Pigsty's extension catalogue lists 19 on no
// release yet (docs/packaging.md, Distributions).
var Distros = []Distro{
	{Name: "el8", Format: RPM, OS: "EL", Version: "8", Majors: []int{14, 15, 16, 17, 18}},
	{Name: "el9", Format: RPM, OS: "EL", Version: "9"},
	{Name: "el10", Format: RPM, OS: "EL", Version: "10"},
	{Name: "bookworm", Format: Deb, OS: "Debian", Version: "12", PGDG: "120"},
	{Name: "trixie", Format: Deb, OS: "Debian", Version: "13", PGDG: "130"},
	{Name: "jammy", Format: Deb, OS: "Ubuntu", Version: "22.04", PGDG: "22.04"},
	{Name: "noble", Format: Deb, OS: "Ubuntu", Version: "24.04", PGDG: "24.04"},
	{Name: "resolute", Format: Deb, OS: "Ubuntu", Version: "26.04", PGDG: "26.04"},
}

// Title is the release as people name it: EL9, Debian 12 (bookworm).
func (d Distro) Title() string {
	if d.Format == RPM {
		return d.OS + d.Version
	}
	return d.OS + " " + d.Version + " (" + d.Name + ")"
}

// DistTag is an EL release's RPM dist tag, .el9.
func (d Distro) DistTag() string { return "." + d.Name }

// MajorsOf are the majors of want that d gets, in want's order.
func (d Distro) MajorsOf(want []int) []int {
	if d.Majors == nil {
		return slices.Clone(want)
	}
	var out []int
	for _, m := range want {
		if slices.Contains(d.Majors, m) {
			out = append(out, m)
		}
	}
	return out
}

// DistroNames lists the distributions by name, comma-separated.
func DistroNames() string { return strings.Join(Names(Distros), ",") }

// Names are the names of ds, in order.
func Names(ds []Distro) []string {
	var names []string
	for _, d := range ds {
		names = append(names, d.Name)
	}
	return names
}

// ParseDistros reads --distro: "all" or a comma list of names; the result
// keeps the model's order.
func ParseDistros(s string) ([]Distro, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("--distro '': use all or some of %s", DistroNames())
	}
	if strings.TrimSpace(s) == "all" {
		return slices.Clone(Distros), nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(s, ",") {
		n = strings.ToLower(strings.TrimSpace(n))
		if _, ok := DistroNamed(n); !ok {
			return nil, fmt.Errorf("unknown distribution %q: use all or some of %s", n, DistroNames())
		}
		want[n] = true
	}
	var out []Distro
	for _, d := range Distros {
		if want[d.Name] {
			out = append(out, d)
		}
	}
	return out, nil
}

// DistroNamed finds a distribution by name.
func DistroNamed(name string) (Distro, bool) {
	for _, d := range Distros {
		if d.Name == name {
			return d, true
		}
	}
	return Distro{}, false
}

// OfFormat are the distributions of ds in format f.
func OfFormat(ds []Distro, f string) []Distro {
	var out []Distro
	for _, d := range ds {
		if d.Format == f {
			out = append(out, d)
		}
	}
	return out
}

// DebDistros are the Debian and Ubuntu releases, for the debian/ tree's
// templates.
func (p Packaging) DebDistros() []Distro { return OfFormat(Distros, Deb) }

// For is p as built for d: its dist tag (an EL release) or its codename
// and release (a Debian or Ubuntu one).
func (p Packaging) For(d Distro) Packaging {
	switch d.Format {
	case RPM:
		p.Dist = d.DistTag()
	case Deb:
		p.DebCodename, p.DebRelease, p.DebPGDG, p.DebOS = d.Name, d.Version, d.PGDG, d.OS
	}
	return p
}
