// Package deb builds the extension's Debian packages, postgresql-NN-pg-lease,
// as dpkg-buildpackage with pg_buildext builds them from the source tree's
// debian/ directory: in pure Go by default (an ar archive of debian-binary,
// control.tar.xz and data.tar.xz with ./-relative member names), or by
// running dpkg-buildpackage itself (--builder dpkg). Both read what a package
// holds from Contents, and the apt repository tree is written in Go.
package deb

import (
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/pglease/pglease-gen/internal/layout"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/sourcetree"
)

// File is one regular file or symbolic link of a package; its
// directories are implied.
type File struct {
	Path string // absolute
	Body []byte
	Mode int64  // permission bits; 0 is 0644
	Link string // target of a symbolic link
	// MTime is the file's date; zero: the package's BuildTime.
	MTime time.Time
}

// Package is what one deb holds and says about itself.
type Package struct {
	Name        string
	Version     string
	Source      string
	Arch        string // "" is all
	Maintainer  string
	Depends     string
	Section     string
	Priority    string
	Homepage    string
	Summary     string
	Description string // continuation lines, already indented
	Files       []File // sorted by path
	BuildTime   time.Time
	// Gzip compresses the tarballs with gzip rather than xz (dpkg-deb -Zgzip):
	// much faster in Go, for the large stand-in server packages.
	Gzip bool
}

// FileName is the deb's file name, e.g.
// postgresql-17-pg-lease_0.3.0-1PGSTY~bookworm_all.deb.
func (p Package) FileName() string { return p.Name + "_" + p.Version + "_" + p.arch() + ".deb" }

func (p Package) arch() string {
	if p.Arch == "" {
		return "all"
	}
	return p.Arch
}

// Contents says what the deb for one major holds: what pg_buildext install
// and the debhelper tools produce from the source tree under Debian's
// layout. Files over 4 KiB in the doc directory are gzipped as
// dh_compress does; changelog.Debian is always.
func Contents(d sourcetree.Data, sources render.Files, major int, built time.Time) (Package, error) {
	name := d.Ext.DebPackage(major)
	p := Package{
		Name: name, Version: d.Pkg.DebVersion(d.Ext.Version(), d.Pkg.Release, d.Suffix), Source: d.Ext.DebSource(),
		Maintainer: d.Pkg.Maintainer, Depends: dependsOn(major), Section: "database", Priority: "optional",
		Homepage: d.Pkg.URL, Summary: d.Ext.Comment, Description: render.DebianText(d.Description), BuildTime: built,
	}
	ext := layout.Debian(major).ExtensionDir()
	for _, f := range d.Files {
		p.Files = append(p.Files, File{Path: path.Join(ext, f), Body: sources[f]})
	}
	doc := "/usr/share/doc/" + name
	changelog, err := gz(sources["debian/changelog"])
	if err != nil {
		return p, err
	}
	readme := sources["README.md"]
	readmeName := "README.md"
	if len(readme) > 4096 {
		if readme, err = gz(readme); err != nil {
			return p, err
		}
		readmeName += ".gz"
	}
	// dh_installdocs keeps README's date from the source tree (upstream's
	// tarball), and gzip -n gives it to the .gz; dpkg-deb clamps it to
	// SOURCE_DATE_EPOCH. What the build writes is dated the build.
	readmeTime := sourcetree.UpstreamTime(d.Ext)
	if built.Before(readmeTime) {
		readmeTime = built
	}
	// upstream's changelog, as dh_installchangelogs finds it in the tree
	// and dh_compress gzips it: changelog.gz
	if upstream, ok := sources["CHANGELOG.md"]; ok {
		b, err := gz(upstream)
		if err != nil {
			return p, err
		}
		p.Files = append(p.Files, File{Path: doc + "/changelog.gz", Body: b, MTime: readmeTime})
	}
	p.Files = append(p.Files,
		File{Path: doc + "/" + readmeName, Body: readme, MTime: readmeTime},
		File{Path: doc + "/changelog.Debian.gz", Body: changelog},
		File{Path: doc + "/copyright", Body: sources["debian/copyright"]},
	)
	for _, f := range p.Files {
		if f.Body == nil {
			return p, fmt.Errorf("package %s: no contents for %s", name, f.Path)
		}
	}
	SortFiles(p.Files)
	return p, nil
}

// SortFiles sorts files by path, as a package lists them.
func SortFiles(files []File) {
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
}

// dependsOn is pg_buildext's postgresql:Depends for a pure SQL extension:
// the server package of the major, with no minimum minor release (the
// source tree's debian/minor_versions names none).
func dependsOn(major int) string { return fmt.Sprintf("postgresql-%d", major) }

// gz compresses as gzip -9n does: no name, no time.
func gz(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// dirs lists every directory the files need, ./-relative with a trailing
// slash, "./" first.
func (p Package) dirs() []string {
	seen := map[string]bool{"./": true}
	out := []string{"./"}
	for _, f := range p.Files {
		for d := path.Dir(f.Path); d != "/"; d = path.Dir(d) {
			name := "." + d + "/"
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// InstalledSize is dpkg-gencontrol's Installed-Size in KiB: each file's
// size rounded up, one for each directory of the tree and one for DEBIAN/.
func (p Package) InstalledSize() int {
	n := len(p.dirs()) + 1
	for _, f := range p.Files {
		if f.Link != "" {
			n++
			continue
		}
		n += (len(f.Body) + 1023) / 1024
	}
	return n
}

// Control is the package's control file, in dpkg-gencontrol's field order.
func (p Package) Control() []byte {
	var b strings.Builder
	field := func(k, v string) { fmt.Fprintf(&b, "%s: %s\n", k, v) }
	field("Package", p.Name)
	if p.Source != "" {
		field("Source", p.Source)
	}
	field("Version", p.Version)
	field("Architecture", p.arch())
	field("Maintainer", p.Maintainer)
	field("Installed-Size", fmt.Sprint(p.InstalledSize()))
	for _, f := range [][2]string{{"Depends", p.Depends}, {"Section", p.Section}, {"Priority", p.Priority}, {"Homepage", p.Homepage}} {
		if f[1] != "" {
			field(f[0], f[1])
		}
	}
	field("Description", p.Summary)
	b.WriteString(p.Description + "\n")
	return []byte(b.String())
}

// MD5Sums is the md5sums control file, as dh_md5sums writes it.
func (p Package) MD5Sums() []byte {
	var b strings.Builder
	for _, f := range p.Files {
		if f.Link != "" {
			continue
		}
		sum := md5.Sum(f.Body)
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), strings.TrimPrefix(f.Path, "/"))
	}
	return []byte(b.String())
}
