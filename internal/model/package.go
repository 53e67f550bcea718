package model

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Packaging holds the facts the source tarball, the RPM spec, the RPMs and
// the debs render from.
type Packaging struct {
	// Release is the package release number (the 1 of 1PGSTY.el9).
	Release int
	// Suffixes are the accepted release suffixes; the first is the default.
	Suffixes []string
	// Dist is the RPM dist tag the packages are built for; For sets it
	// per EL release, and this default is the one the stand-ins use.
	Dist string
	// Arches are the EL9 architectures the repository trees are laid out
	// for; the RPMs themselves are noarch.
	Arches []string
	// Description is the packages' long description, wrapped for rpm.
	Description string
	// URL is the project's home.
	URL string
	// SourceURL is the directory the source tarball is published in (the
	// spec's Source0 is there); empty: the project's release download of
	// the version, URL/releases/download/vVERSION.
	SourceURL string
	// Maintainer is the packager, "Name <email>".
	Maintainer string
	// Copyright is the DEP-5 copyright line of the Debian packages.
	Copyright string
	// DebCodename, DebRelease and DebPGDG are the release the debs are
	// built for (bookworm, 12, PGDG's 120); For sets them per
	// distribution, and these defaults are the ones the tarball's debian/
	// changelog names.
	DebCodename string
	DebRelease  string
	DebPGDG     string
	DebOS       string // Debian or Ubuntu
	// DebArches are the apt repository's architectures; the debs
	// themselves are Architecture: all.
	DebArches []string
	// Changelog is newest first.
	Changelog []Change
}

// Change is one changelog entry.
type Change struct {
	Date    string // YYYY-MM-DD, or YYYY-MM-DD HH:MM (UTC) for a second release on one day
	Version string
	Release int
	// Items are the entry's items, each a sentence or two of any length:
	// Bullets wraps them as each changelog format does
	Items []string
	// By and Suffix are who made the release and its release suffix;
	// empty: the packaging's own (the project's entries leave them empty,
	// and a packager's build stamps them, so that its entry is the
	// packager's and the older ones stay the project's).
	By     string
	Suffix string
}

// Who is the entry's maintainer, or def when it names none.
func (c Change) Who(def string) string {
	if c.By != "" {
		return c.By
	}
	return def
}

// SuffixOr is the entry's release suffix, or def when it names none.
func (c Change) SuffixOr(def string) string {
	if c.Suffix != "" {
		return c.Suffix
	}
	return def
}

// Packages is the one description of how pg_lease is packaged.
var Packages = Packaging{
	Release:  1,
	Suffixes: []string{"PGSTY", "PIGSTY", "PGDG"},
	Dist:     ".el9",
	Arches:   []string{"x86_64", "aarch64"},
	Description: "pg_lease gives applications expiring ownership of named resources:\n" +
		"lease.acquire, renew, release and inspect, with a fencing epoch that grows\n" +
		"with every new holder, so that a resource can refuse a stale holder;\n" +
		"lease.guard fences writes in the same database, lease.purge cleans up.\n" +
		"Pure SQL and PL/pgSQL; a non-superuser with CREATE may install it.",
	URL:        "https://github.com/pglease/pglease-gen",
	Maintainer: "pglease maintainers <maintainers@pglease.dev>",
	Copyright:  "2026, The pglease-gen Authors",
	// Debian 12
	DebCodename: "bookworm",
	DebRelease:  "12",
	DebPGDG:     "120",
	DebOS:       "Debian",
	DebArches:   []string{"amd64", "arm64"},
	Changelog: []Change{{
		Date: "2026-12-04 22:00", Version: "0.5.1", Release: 1,
		Items: []string{
			"Security: on PostgreSQL 14 the installer could run code as superuser through objects it created in schema lease; 0.5.0 users on 14: update (ALTER EXTENSION pg_lease UPDATE) and check the installer's role (a schema lease made before CREATE EXTENSION, on any major, too)",
			"A lowered maximum TTL reaches every session's next call at once and always keeps the grace as long as the leases it allowed",
			"A session's lease.synchronous_commit raises a database floor of session",
			"purge never removes a name whose session a keep-alive is renewing; keep_alive reports how many of the session's names release released",
			"The installer's own pg_dump and pg_restore carry every lease and epoch",
			"Security: session ids are random, and no answer tells another owner's session from none (0.5.0's ids could be guessed from one's own)",
			"A raised maximum TTL takes effect after a delay (set_max_ttl's new argument, 1 minute), so that a standby promoted within it has it",
			"A holder believes a grant for expires_at - clock_timestamp(), read in the statement that asked, from its own send: an idempotent re-acquire or a grant under an older session holds less than its TTL",
			"inspect answers the state of one instant of its call: a backend paused in the middle of it no longer shows a lease its holder renewed in time as lapsed",
			"The update keeps the privileges an operator gave or took on the functions it makes again (acquire, renew, session_acquire, keep_alive, set_max_ttl), in the database and in its pg_dump; those four calls answer in named row types, the same columns, at fewer instructions a call than 0.5.0's",
		},
	}, {
		Date: "2026-12-04 20:00", Version: "0.5.0", Release: 1,
		Items: []string{
			"Sessions: one keep-alive renews every name under it; close releases them",
			"The grace: after a crash, promotion or restore no name goes to a new holder until every lease the fault may have lost has run out",
			"lease.max_ttl (1 minute on a fresh install) bounds the grace; renewals commit without a flush; an updated database keeps 0.4.0's behaviour until its installer calls lease.set_max_ttl",
		},
	}, {
		Date: "2026-12-01 20:00", Version: "0.4.0", Release: 1,
		Items: []string{
			"0.3.0 users: update before pg_upgrade or a restore (0.3.0 fails there)",
			"Eras survive pg_upgrade, restores in place and crash restarts",
			"Rows restored without their eras move to an era above them",
			"The era check costs no extra statement; entering an era is durable",
			"Only a database or role setting lowers the floor (lease.set_floor)",
		},
	}, {
		Date: "2026-12-01", Version: "0.3.0", Release: 1,
		Items: []string{
			"Eras: after a restart, a promotion or a restore, epochs are above all before",
			"A change to a lease commits at least at synchronous_commit = on",
			"lease.current_era(), lease.new_era(), lease.synchronous_commit",
			"Updates from 0.1.0 and 0.2.0, checked against a fresh install",
		},
	}, {
		Date: "2026-11-30", Version: "0.2.0", Release: 1,
		Items: []string{
			"lease.guard fences writes in the caller's transaction",
			"lease.purge deletes released and lapsed names; lease.list",
			"A blocking acquire never waits past max_wait, lock waits included",
			"Update from 0.1.0, checked against a fresh install of 0.2.0",
		},
	}, {
		Date: "2026-11-29", Version: "0.1.0", Release: 1,
		Items: []string{
			"First release: lease.acquire, renew, release and inspect with fencing epochs",
			"Tested with pg_regress and isolation suites on PostgreSQL 14 to 18",
		},
	}},
}

// ParseSuffix accepts a release suffix in any case and returns its
// canonical spelling.
func (p Packaging) ParseSuffix(s string) (string, error) {
	for _, ok := range p.Suffixes {
		if strings.EqualFold(s, ok) {
			return ok, nil
		}
	}
	return "", fmt.Errorf("unknown release suffix %q: use one of %s", s, strings.Join(p.Suffixes, ", "))
}

// SourceDir is the URL of the directory holding the tarball of version
// v (SourceURL, or the project's release download of v).
func (p Packaging) SourceDir(v string) string {
	if p.SourceURL != "" {
		return p.SourceURL
	}
	return p.URL + "/releases/download/v" + v
}

// ReleaseTag is the full release, e.g. 1PGSTY.el9.
func (p Packaging) ReleaseTag(suffix string) string {
	return fmt.Sprintf("%d%s%s", p.Release, suffix, p.Dist)
}

// EVR is a changelog entry's version-release with the suffix but without
// the dist tag, as rpm changelogs write it: 0.1.0-1PGSTY.
func (c Change) EVR(suffix string) string {
	return fmt.Sprintf("%s-%d%s", c.Version, c.Release, c.SuffixOr(suffix))
}

// Time is the changelog date of c, at midnight UTC unless it says when.
func (c Change) Time() time.Time {
	t, err := time.Parse(time.DateOnly, c.Date)
	if err != nil {
		t, err = time.Parse("2006-01-02 15:04", c.Date)
	}
	if err != nil {
		panic(fmt.Sprintf("changelog date %q: %v", c.Date, err))
	}
	return t
}

// Day is the changelog date of c at noon UTC, whatever time it gives:
// RPM changelogs have days only, and rpmbuild puts each entry at noon.
func (c Change) Day() time.Time {
	t := c.Time()
	return time.Date(t.Year(), t.Month(), t.Day(), 12, 0, 0, 0, time.UTC)
}

// At is the packaging as it was when version v was the newest: the
// changelog up to v's newest release, and that release. Building an
// older version (Extension.At) beside it makes the packages that version
// was published as.
func (p Packaging) At(v string) (Packaging, error) {
	for i, c := range p.Changelog {
		if c.Version == v {
			p.Changelog = slices.Clone(p.Changelog[i:])
			p.Release = c.Release
			return p, nil
		}
	}
	return p, fmt.Errorf("the changelog has no entry of version %q", v)
}

// Released is the date of the newest changelog entry: the default
// SOURCE_DATE_EPOCH, so that builds are reproducible even without one.
func (p Packaging) Released() time.Time { return p.Changelog[0].Time() }

// PackageName is the RPM name for a major, e.g. pg_lease_17.
func (e Extension) PackageName(major int) string { return fmt.Sprintf("%s_%d", e.Name, major) }

// RPMKeyFile is the public signing key's file name in the build output,
// as EL repositories name theirs: RPM-GPG-KEY-pg_lease.
func (e Extension) RPMKeyFile() string { return "RPM-GPG-KEY-" + e.Name }

// RepoFile is the dnf repository file a host drops into /etc/yum.repos.d.
func (e Extension) RepoFile() string { return e.Name + ".repo" }

// SourcesFile is the apt sources file a host drops into
// /etc/apt/sources.list.d.
func (e Extension) SourcesFile() string { return e.Name + ".sources" }

// SourcesFileFor is the build's sources file for one codename, which a
// host saves as SourcesFile: pg_lease-bookworm.sources.
func (e Extension) SourcesFileFor(codename string) string {
	return e.Name + "-" + codename + ".sources"
}

// ServerPackage is the PGDG server package a major's RPM requires.
func ServerPackage(major int) string { return fmt.Sprintf("postgresql%d-server", major) }

// Tarball is the source tarball's name, e.g. pg_lease-0.1.0.tar.gz.
func (e Extension) Tarball() string { return e.Name + "-" + e.Version() + ".tar.gz" }

// PGXNZip is the PGXN release zip's name, e.g. pg_lease-0.3.0.zip.
func (e Extension) PGXNZip() string { return e.Name + "-" + e.Version() + ".zip" }

// SourceDir is the tarball's top directory, e.g. pg_lease-0.1.0.
func (e Extension) SourceDir() string { return e.Name + "-" + e.Version() }

// MachineArches are the architectures the packages are built and proven
// for, by Go's name (GOARCH).
var MachineArches = []string{"amd64", "arm64"}

// ParseArch reads an architecture by any of its usual names (Go's and
// Debian's amd64/arm64, EL's and uname's x86_64/aarch64) and returns Go's.
func ParseArch(s string) (string, error) {
	for _, a := range MachineArches {
		if s == a || s == ELArch(a) {
			return a, nil
		}
	}
	var names []string
	for _, a := range MachineArches {
		names = append(names, a+" ("+ELArch(a)+")")
	}
	return "", fmt.Errorf("unknown architecture %q: use one of %s", s, strings.Join(names, ", "))
}

// ELArch is the EL architecture name of a Go architecture (GOARCH), as in
// el9.x86_64 and in an RPM's arch; "" when EL has none for it.
func ELArch(goarch string) string {
	switch goarch {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	}
	return ""
}

// DebVersion is a Debian package version of upstream version v at release
// r: Pigsty's form 0.3.0-1PGSTY~bookworm for its suffixes, and PGDG's own
// 0.3.0-1.pgdg120+1 (0.3.0-1.pgdg24.04+1 on Ubuntu) for PGDG.
func (p Packaging) DebVersion(v string, r int, suffix string) string {
	if suffix == "PGDG" {
		return fmt.Sprintf("%s-%d.pgdg%s+1", v, r, p.DebPGDG)
	}
	return fmt.Sprintf("%s-%d%s~%s", v, r, suffix, p.DebCodename)
}

// DebDistribution is the distribution a Debian changelog entry with
// release suffix suffix names: the codename (bookworm), or for PGDG's form
// apt.postgresql.org's own distribution (bookworm-pgdg).
func (p Packaging) DebDistribution(suffix string) string {
	if suffix == "PGDG" {
		return p.DebCodename + "-pgdg"
	}
	return p.DebCodename
}

// DebName is the extension's name as Debian package names spell it (no
// underscores): pg-lease.
func (e Extension) DebName() string { return strings.ReplaceAll(e.Name, "_", "-") }

// DebSource is the Debian source package's name.
func (e Extension) DebSource() string { return e.DebName() }

// DebPackage is the deb of a major, e.g. postgresql-17-pg-lease.
func (e Extension) DebPackage(major int) string {
	return fmt.Sprintf("postgresql-%d-%s", major, e.DebName())
}

// DebClientPackage is Debian's client package of a major.
func DebClientPackage(major int) string { return fmt.Sprintf("postgresql-client-%d", major) }

// DebServerPackage is the Debian server package a major's deb depends on.
func DebServerPackage(major int) string { return fmt.Sprintf("postgresql-%d", major) }

// DebArch is the Debian architecture name of a Go architecture (GOARCH).
func DebArch(goarch string) string {
	switch goarch {
	case "386":
		return "i386"
	case "arm":
		return "armhf"
	case "ppc64le":
		return "ppc64el"
	}
	return goarch
}

// Bullets lays items out as a changelog does: each item's first line
// starts with first ("  * " in Debian's, "- " in RPM's), the lines it
// wraps onto with cont, none longer than width unless one word is.
func Bullets(items []string, first, cont string, width int) []string {
	var out []string
	for _, item := range items {
		line := first
		fresh := true
		for _, w := range strings.Fields(item) {
			if !fresh && len(line)+1+len(w) > width {
				out = append(out, line)
				line, fresh = cont, true
			}
			if !fresh {
				line += " "
			}
			line += w
			fresh = false
		}
		out = append(out, line)
	}
	return out
}

// AsPublished is version v of pg_lease with its packaging as v was
// published (Extension.At and Packaging.At): what a build of an older
// version beside a newer one makes.
func AsPublished(v string) (Extension, Packaging, error) {
	ext, err := PgLease.At(v)
	if err != nil {
		return ext, Packaging{}, err
	}
	pkg, err := Packages.At(v)
	return ext, pkg, err
}
