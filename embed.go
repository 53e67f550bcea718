// Package pglease carries the project's source files (templates and the
// frozen released scripts, control file, RPM spec, Debian packaging,
// regression and isolation suites, README, LICENSE, the user docs and the changelog) into the pglease-gen
// binary, so that it renders and tests the extension from any directory.
package pglease

import "embed"

// Files holds the templates and test suites, rooted at the repository's top.
//
//go:embed templates control rpm deb regress/sql regress/expected isolation/specs isolation/expected README.md LICENSE docs CHANGELOG.md
var Files embed.FS
