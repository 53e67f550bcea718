// Package layout says where a PostgreSQL major's files are inside an image:
// the server binaries, the extension directory and the pg_regress and
// pg_isolation_regress drivers. The test runner, the local image builder,
// the RPM and deb builders and the install proofs all read the paths from
// here.
package layout

import (
	"fmt"
	"path"
)

// Layout is one major's file layout.
type Layout struct {
	Name   string // "debian", "pgdg" or "local"
	Major  int
	Prefix string // root of the major's private tree
	BinDir string // postgres, initdb, pg_ctl, psql
	// ShareDir holds extension/; ExtensionDir is ShareDir/extension.
	ShareDir string
	// PGXSDir holds src/test/regress/pg_regress and
	// src/test/isolation/pg_isolation_regress (with isolationtester beside it).
	PGXSDir string
}

// Debian is the layout of the official postgres:N images and of Debian's
// postgresql-N packages: /usr/lib/postgresql/N and /usr/share/postgresql/N.
func Debian(major int) Layout {
	prefix := fmt.Sprintf("/usr/lib/postgresql/%d", major)
	return Layout{
		Name:     "debian",
		Major:    major,
		Prefix:   prefix,
		BinDir:   prefix + "/bin",
		ShareDir: fmt.Sprintf("/usr/share/postgresql/%d", major),
		PGXSDir:  prefix + "/lib/pgxs",
	}
}

// PGDG is the layout of the PGDG RPMs on EL: everything under /usr/pgsql-N.
func PGDG(major int) Layout {
	prefix := fmt.Sprintf("/usr/pgsql-%d", major)
	return Layout{
		Name:     "pgdg",
		Major:    major,
		Prefix:   prefix,
		BinDir:   prefix + "/bin",
		ShareDir: prefix + "/share",
		PGXSDir:  prefix + "/lib/pgxs",
	}
}

// ExtensionDir is where CREATE EXTENSION looks for control and script files.
func (l Layout) ExtensionDir() string { return path.Join(l.ShareDir, "extension") }

// PgRegress is the path of pg_regress.
func (l Layout) PgRegress() string { return path.Join(l.PGXSDir, "src/test/regress/pg_regress") }

// PgIsolationRegress is the path of pg_isolation_regress.
func (l Layout) PgIsolationRegress() string {
	return path.Join(l.PGXSDir, "src/test/isolation/pg_isolation_regress")
}

// Bin is the path of a server program, e.g. Bin("initdb").
func (l Layout) Bin(name string) string { return path.Join(l.BinDir, name) }
