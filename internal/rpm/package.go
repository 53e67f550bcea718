// Package rpm builds the extension's RPMs for EL9: the spec rendered from
// rpm/, binary packages written either in pure Go (write.go) or by
// rpmbuild from that spec, the source RPMs, and yum repository trees with
// their metadata. Both builders read what goes into a package from Contents,
// so they cannot drift apart.
package rpm

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/pglease/pglease-gen/internal/layout"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/sourcetree"
)

// SpecTemplate is the spec's template in the source tree.
const SpecTemplate = "rpm/pg_lease.spec.tmpl"

// BuildHost is recorded as every package's build host, so that builds on
// different machines give the same bytes.
const BuildHost = "pglease-gen"

// Kinds of file in a package, as the spec's %files marks them.
const (
	Plain   = iota
	Doc     // %doc
	License // %license
)

// File is one file, directory or symbolic link of a binary package.
type File struct {
	Path string
	Mode uint32 // permission bits
	Dir  bool
	Link string // target, for a symbolic link
	Kind int
	Body []byte
}

// Package is what one binary RPM holds and says about itself.
type Package struct {
	Name        string
	Version     string
	Release     string // e.g. 1PGSTY.el9
	Arch        string // "" is noarch
	Summary     string
	Description string
	License     string
	URL         string
	Requires    []string
	Files       []File // sorted by path
	Changelog   []model.Change
	Maintainer  string
	Suffix      string // release suffix, for the changelog
	BuildTime   time.Time
	// SourceTime is the date of the source tarball's files: %install
	// keeps it (install -p), clamped to the build's SOURCE_DATE_EPOCH, so
	// the payload is dated the earlier of the two.
	SourceTime time.Time
}

// payloadTime is when the binary payload's entries are dated.
func (p Package) payloadTime() time.Time {
	if !p.SourceTime.IsZero() && p.SourceTime.Before(p.BuildTime) {
		return p.SourceTime
	}
	return p.BuildTime
}

// NVR is name-version-release.
func (p Package) NVR() string { return p.Name + "-" + p.Version + "-" + p.Release }

// FileName is the binary RPM's file name.
func (p Package) FileName() string { return p.NVR() + "." + p.arch() + ".rpm" }

func (p Package) arch() string {
	if p.Arch == "" {
		return "noarch"
	}
	return p.Arch
}

// SourceRPM is the source RPM's file name.
func (p Package) SourceRPM() string { return p.NVR() + ".src.rpm" }

// Contents says what the binary RPM for one major holds: what the spec's
// %install and %files produce, under the PGDG prefix.
func Contents(d sourcetree.Data, sources render.Files, major int, built time.Time) (Package, error) {
	name := d.Ext.PackageName(major)
	ext := layout.PGDG(major).ExtensionDir()
	p := Package{
		Name: name, Version: d.Ext.Version(), Release: d.Pkg.ReleaseTag(d.Suffix),
		Summary: d.Summary, Description: d.Description, License: d.Ext.License, URL: d.Pkg.URL,
		Requires:  []string{model.ServerPackage(major)},
		Changelog: d.Pkg.Changelog, Maintainer: d.Pkg.Maintainer, Suffix: d.Suffix, BuildTime: built,
		SourceTime: sourcetree.UpstreamTime(d.Ext),
	}
	for _, f := range d.Files {
		p.Files = append(p.Files, File{Path: path.Join(ext, f), Mode: 0o644, Body: sources[f]})
	}
	docDir := "/usr/share/doc/" + name
	licDir := "/usr/share/licenses/" + name
	p.Files = append(p.Files,
		File{Path: docDir, Mode: 0o755, Dir: true},
		File{Path: docDir + "/README.md", Mode: 0o644, Kind: Doc, Body: sources["README.md"]},
		File{Path: licDir, Mode: 0o755, Dir: true},
		File{Path: licDir + "/LICENSE", Mode: 0o644, Kind: License, Body: sources["LICENSE"]},
	)
	for _, f := range p.Files {
		if !f.Dir && f.Link == "" && f.Body == nil {
			return p, fmt.Errorf("package %s: no contents for %s", name, f.Path)
		}
	}
	slices.SortFunc(p.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return p, nil
}
