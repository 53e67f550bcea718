// Package sourcetree makes the source distributions: upstream's tree (control
// file, every install and update script, a PGXS Makefile, META.json,
// README, LICENSE and both test suites), the same for every packager, as
// the tarball a spec's Source0, Debian's orig and PGXN take; and the
// debian/ directory of a packaging, which the Debian source package
// carries beside it.
package sourcetree

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/sign"
	"github.com/pglease/pglease-gen/internal/suite"
)

// Data is what the packaging templates (Makefile, META.json, the spec, debian/)
// see: the one template data of render.
type Data = render.Data

// NewData fills Data for ext and pkg with the given release suffix.
func NewData(ext model.Extension, pkg model.Packaging, src fs.FS, suffix string) (Data, error) {
	tests, err := suite.AllTests(src)
	if err != nil {
		return Data{}, err
	}
	t := map[string][]string{}
	for k, v := range tests {
		t[string(k)] = v
	}
	license, err := fs.ReadFile(src, "LICENSE")
	if err != nil {
		return Data{}, err
	}
	files := append([]string{ext.ControlFile()}, ext.Scripts()...)
	slices.Sort(files)
	return Data{
		Ext: ext, Pkg: pkg, Suffix: suffix, Files: files, Tests: t,
		Summary:     strings.ToUpper(ext.Comment[:1]) + ext.Comment[1:],
		Description: pkg.Description,
		LicenseText: string(license),
	}, nil
}

// Sources returns the source tree, by path below its top directory.
func Sources(d Data, src fs.FS) (render.Files, error) {
	ext, err := render.Extension(d.Ext, src)
	if err != nil {
		return nil, err
	}
	files := render.Files{}
	for _, name := range d.Files {
		files[name] = ext[name]
	}
	for name, tmpl := range map[string]string{"Makefile": "templates/Makefile.tmpl", "META.json": "templates/META.json.tmpl"} {
		if files[name], err = d.Render(src, tmpl); err != nil {
			return nil, err
		}
	}
	for name, tmpl := range DebianTemplates {
		if files[name], err = d.Render(src, tmpl); err != nil {
			return nil, err
		}
	}
	if files["debian/control"], err = GenControl(files["debian/control.in"], d.Ext.Majors); err != nil {
		return nil, err
	}
	for name, static := range map[string]string{"debian/docs": "deb/docs", "debian/source/format": "deb/source/format", "debian/minor_versions": "deb/minor_versions",
		"debian/tests/control": "deb/tests/control", "debian/tests/installcheck": "deb/tests/installcheck"} {
		if files[name], err = fs.ReadFile(src, static); err != nil {
			return nil, err
		}
	}
	if files["LICENSE"], err = fs.ReadFile(src, "LICENSE"); err != nil {
		return nil, err
	}
	// the README is the extension's page, with the user docs it links to
	pages, err := userPages(d.Ext, src, model.Packages.URL)
	if err != nil {
		return nil, err
	}
	for name, b := range pages {
		files[name] = b
	}
	for _, k := range suite.Kinds {
		err := fs.WalkDir(src, string(k), func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			files[p], err = fs.ReadFile(src, p)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return files, nil
}

// Options configure a package builder (rpm.Build, deb.Build).
type Options struct {
	Ext    model.Extension
	Pkg    model.Packaging
	Src    fs.FS
	Majors []int
	// Distros are the distributions to build for (each package builder
	// takes those of its format); none: the one Pkg names (Dist,
	// DebCodename).
	Distros []model.Distro
	Suffix  string    // release suffix, e.g. PGSTY
	Builder string    // the builder's own name for how to write the packages
	Time    time.Time // SOURCE_DATE_EPOCH: build time and every mtime
	Step    func(format string, args ...any)
	Sign    *sign.Signer // sign the packages and repositories; nil: unsigned
	// SignedAt is when the repositories' metadata (InRelease, Release.gpg,
	// repomd.xml.asc) is signed: the build's run, so that a host sees when
	// it was published; zero: Time, as the packages
	SignedAt time.Time
	// Held is a published tree this build adds to (build --into): the
	// packages its indices list stay in the repositories the build
	// writes, beside the new ones; nil: the repositories hold this
	// build's packages alone.
	Held render.Files
}

// RepoSigner signs the repositories' metadata: Sign at SignedAt (nil
// when unsigned).
func (o Options) RepoSigner() *sign.Signer {
	if o.Sign == nil || o.SignedAt.IsZero() {
		return o.Sign
	}
	return o.Sign.At(o.SignedAt)
}

// DistrosOf are the distributions of format f that o builds for.
func (o Options) DistrosOf(f string) []model.Distro {
	if len(o.Distros) == 0 {
		name := o.Pkg.DebCodename
		if f == model.RPM {
			name = strings.TrimPrefix(o.Pkg.Dist, ".")
		}
		if d, ok := model.DistroNamed(name); ok {
			return []model.Distro{d}
		}
		return nil
	}
	return model.OfFormat(o.Distros, f)
}

// Artifact is one file a build wrote, as build's summary and --json
// describe it.
type Artifact struct {
	Path   string `json:"path"` // relative to the output directory
	Kind   string `json:"kind"` // tarball, pgxn-zip, oci-layout, docker-archive, spec, srpm, rpm, repodata, deb, dsc, orig-tarball, debian-tarball, apt-release, signature, public-key, repo-file, checksums
	Major  int    `json:"major,omitempty"`
	Arch   string `json:"arch,omitempty"`   // repository architecture of an rpm
	Distro string `json:"distro,omitempty"` // el9, bookworm: the distribution of a package or repository file
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
}

// DebianTemplates render the source tree's debian/ directory (the files
// dpkg-buildpackage and pg_buildext read), from deb/ in the project.
var DebianTemplates = map[string]string{
	"debian/control.in": "deb/control.in.tmpl",
	"debian/rules":      "deb/rules.tmpl",
	"debian/changelog":  "deb/changelog.tmpl",
	"debian/copyright":  "deb/copyright.tmpl",
	"debian/pgversions": "deb/pgversions.tmpl",
}

// Executables are the source tree's files with the execute bit.
var Executables = map[string]bool{"debian/rules": true, "debian/tests/installcheck": true}

// GenControl makes debian/control from debian/control.in as
// `pg_buildext updatecontrol` does: every binary package paragraph whose
// name holds PGVERSION once per major, in order; PGVERSION elsewhere is
// the newest major.
func GenControl(in []byte, majors []int) ([]byte, error) {
	if len(majors) == 0 {
		return nil, fmt.Errorf("debian/control: no majors")
	}
	newest := fmt.Sprint(majors[len(majors)-1])
	var out []string
	for _, para := range strings.Split(strings.TrimRight(string(in), "\n"), "\n\n") {
		if strings.HasPrefix(para, "Package: ") && strings.Contains(strings.SplitN(para, "\n", 2)[0], "PGVERSION") {
			for _, m := range majors {
				out = append(out, strings.ReplaceAll(para, "PGVERSION", fmt.Sprint(m)))
			}
			continue
		}
		out = append(out, strings.ReplaceAll(para, "PGVERSION", newest))
	}
	return []byte(strings.Join(out, "\n\n") + "\n"), nil
}

// Tarball packs files below top/ as a tar.gz that depends only on its
// input and mtime: sorted entries, directories included, owner root,
// mode 0644 (0755 for directories and Executables), no gzip name or time.
func Tarball(files render.Files, top string, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	hdr := func(name string, typ byte, mode int64, size int) *tar.Header {
		return &tar.Header{Name: name, Typeflag: typ, Mode: mode, Size: int64(size), ModTime: mtime.UTC().Truncate(time.Second),
			Uname: "root", Gname: "root", Format: tar.FormatUSTAR}
	}
	err = EachEntry(files, top, func(d string) error {
		return tw.WriteHeader(hdr(d+"/", tar.TypeDir, 0o755, 0))
	}, func(name, full string) error {
		if len(full) > 100 {
			return fmt.Errorf("tarball: %s is too long for a ustar name", full)
		}
		mode := int64(0o644)
		if Executables[name] {
			mode = 0o755
		}
		if err := tw.WriteHeader(hdr(full, tar.TypeReg, mode, len(files[name]))); err != nil {
			return err
		}
		_, err := tw.Write(files[name])
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// EachEntry walks files as an archive lays them out below top/: sorted,
// each directory (top's too) once before what it holds, then the file
// (by its name in files and its full name).
func EachEntry(files render.Files, top string, dir func(d string) error, file func(name, full string) error) error {
	dirs := map[string]bool{}
	var mkdir func(string) error
	mkdir = func(d string) error {
		if d == "." || dirs[d] {
			return nil
		}
		if err := mkdir(path.Dir(d)); err != nil {
			return err
		}
		dirs[d] = true
		return dir(d)
	}
	if err := mkdir(top); err != nil {
		return err
	}
	for _, name := range files.Names() {
		full := path.Join(top, name)
		if err := mkdir(path.Dir(full)); err != nil {
			return err
		}
		if err := file(name, full); err != nil {
			return err
		}
	}
	return nil
}

// Upstream is the upstream source tree, what the tarball and the PGXN zip
// hold: the extension, its Makefile and META.json, README, LICENSE and
// both suites, rendered from the project's own facts (model.Packages:
// its maintainer and URLs), never a packager's, and without debian/,
// which is packaging (the Debian source package's debian.tar). So every
// packager publishes the same bytes for a version: Debian's archive
// refuses a second orig tarball of one version, and an RPM's Source0
// checksum must match upstream's.
func Upstream(ext model.Extension, src fs.FS) (render.Files, error) {
	d, err := NewData(ext, model.Packages, src, model.Packages.Suffixes[0])
	if err != nil {
		return nil, err
	}
	files, err := Sources(d, src)
	if err != nil {
		return nil, err
	}
	for name := range files {
		if strings.HasPrefix(name, "debian/") {
			delete(files, name)
		}
	}
	return files, nil
}

// UpstreamTime is when ext's version was released upstream: the date of
// the project's first changelog entry of that version. Every member of the
// tarball and the zip has it, whatever SOURCE_DATE_EPOCH a packager's
// build uses.
func UpstreamTime(ext model.Extension) time.Time {
	var t time.Time
	for _, c := range model.Packages.Changelog {
		if c.Version == ext.Version() {
			t = c.Time() // newest first: the last match is the first release
		}
	}
	if t.IsZero() {
		return model.Packages.Released()
	}
	return t
}

// UpstreamTarball is the upstream source tarball of ext's version.
func UpstreamTarball(ext model.Extension, src fs.FS) ([]byte, error) {
	files, err := Upstream(ext, src)
	if err != nil {
		return nil, err
	}
	return Tarball(files, ext.SourceDir(), UpstreamTime(ext))
}

// Debian is the debian/ directory of packaging d, by path below the
// source tree's top (debian/...), its control file listing the binary
// packages of majors: what the Debian source package's debian.tar holds.
func Debian(d Data, src fs.FS, majors []int) (render.Files, error) {
	files, err := Sources(d, src)
	if err != nil {
		return nil, err
	}
	out := render.Files{}
	for name, b := range files {
		if strings.HasPrefix(name, "debian/") {
			out[name] = b
		}
	}
	if out["debian/control"], err = GenControl(out["debian/control.in"], majors); err != nil {
		return nil, err
	}
	return out, nil
}
