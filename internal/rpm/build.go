package rpm

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/sourcetree"
)

// Builders.
const (
	PureGo   = "go"       // our own RPM writer, the default
	Rpmbuild = "rpmbuild" // the rendered spec through rpmbuild
)

// Options configure Build; Builder is one of the builders above.
type Options = sourcetree.Options

// Artifact is one file a build wrote.
type Artifact = sourcetree.Artifact

// RepoDir is the repository tree of an architecture, e.g. el9.x86_64.
func RepoDir(pkg model.Packaging, arch string) string {
	return strings.TrimPrefix(pkg.Dist, ".") + "." + arch
}

// HostRepoDir is the repository tree as a host's .repo names it, for
// every EL release and architecture at once: el$releasever.$basearch,
// which dnf fills in.
func HostRepoDir(pkg model.Packaging) string {
	pkg.Dist = ".el$releasever"
	return RepoDir(pkg, "$basearch")
}

// SpecFile is the rendered spec's name.
func SpecFile(ext model.Extension) string { return ext.Name + ".spec" }

// Build makes the source tarball, the spec, a source and a binary RPM per
// major and the repository trees, all in memory (package artifact adds the
// debs and the checksums, and publishes them).
func Build(ctx context.Context, o Options) (render.Files, []Artifact, error) {
	step := o.Step
	if step == nil {
		step = func(string, ...any) {}
	}
	if len(o.Majors) == 0 {
		return nil, nil, errors.New("no PostgreSQL majors to build for")
	}
	// Source0 is upstream's tarball, the same bytes whoever builds
	sources, err := sourcetree.Upstream(o.Ext, o.Src)
	if err != nil {
		return nil, nil, err
	}
	tarball, err := sourcetree.Tarball(sources, o.Ext.SourceDir(), sourcetree.UpstreamTime(o.Ext))
	if err != nil {
		return nil, nil, err
	}
	d, err := sourcetree.NewData(o.Ext, o.Pkg, o.Src, o.Suffix)
	if err != nil {
		return nil, nil, err
	}
	spec, err := d.Render(o.Src, SpecTemplate)
	if err != nil {
		return nil, nil, err
	}
	files := render.Files{o.Ext.Tarball(): tarball, SpecFile(o.Ext): spec}
	arts := []Artifact{{Path: o.Ext.Tarball(), Kind: "tarball"}, {Path: SpecFile(o.Ext), Kind: "spec"}}
	step("source tarball %s and spec %s", o.Ext.Tarball(), SpecFile(o.Ext))

	// each source RPM's spec names its major, so that it rebuilds alone;
	// the spec does not depend on the EL release, so one per major serves all
	majorSpecs := map[int][]byte{}
	specs := func(major int) ([]byte, error) {
		if b, ok := majorSpecs[major]; ok {
			return b, nil
		}
		md := d
		md.Major = major
		b, err := md.Render(o.Src, SpecTemplate)
		majorSpecs[major] = b
		return b, err
	}
	for _, dis := range o.DistrosOf(model.RPM) {
		pkg := o.Pkg.For(dis)
		dd, err := sourcetree.NewData(o.Ext, pkg, o.Src, o.Suffix)
		if err != nil {
			return nil, nil, err
		}
		var infos []Info
		for _, major := range dis.MajorsOf(o.Majors) {
			p, err := Contents(dd, sources, major, o.Time)
			if err != nil {
				return nil, nil, err
			}
			majorSpec, err := specs(major)
			if err != nil {
				return nil, nil, err
			}
			var bin, src []byte
			switch o.Builder {
			case PureGo, "":
				if bin, err = Pack(p); err == nil {
					src, err = PackSource(p, []Source{{Name: SpecFile(o.Ext), Body: majorSpec, Spec: true}, {Name: o.Ext.Tarball(), Body: tarball}})
				}
			case Rpmbuild:
				bin, src, err = runRpmbuild(ctx, pkg, p, major, SpecFile(o.Ext), majorSpec, o.Ext.Tarball(), tarball, o.Time)
			default:
				err = fmt.Errorf("unknown builder %q: use %s or %s", o.Builder, PureGo, Rpmbuild)
			}
			if err == nil && o.Sign != nil {
				if bin, err = Sign(bin, o.Sign); err == nil {
					src, err = Sign(src, o.Sign)
				}
			}
			if err != nil {
				return nil, nil, err
			}
			info, err := ReadInfo(p.FileName(), bin)
			if err != nil {
				return nil, nil, err
			}
			infos = append(infos, info)
			srpm := path.Join("SRPMS", p.SourceRPM())
			files[srpm] = src
			arts = append(arts, Artifact{Path: srpm, Kind: "srpm", Major: major, Distro: dis.Name})
			for _, arch := range pkg.Arches {
				name := path.Join(RepoDir(pkg, arch), p.FileName())
				files[name] = bin
				arts = append(arts, Artifact{Path: name, Kind: "rpm", Major: major, Arch: arch, Distro: dis.Name})
			}
			step("%s, PostgreSQL %d: %s and %s (%s)", dis.Title(), major, p.FileName(), p.SourceRPM(), cmp.Or(o.Builder, PureGo))
		}
		for _, arch := range pkg.Arches {
			// a published tree (build --into) keeps its packages beside
			// this build's, its metadata one generation, its revision
			// never going back
			h, err := heldTree(o.Held, RepoDir(pkg, arch), infos)
			if err != nil {
				return nil, nil, err
			}
			md, err := Repodata(append(slices.Clone(infos), h.infos...), max(int(o.Time.Unix()), h.revision))
			if err != nil {
				return nil, nil, err
			}
			for name, b := range h.files {
				files[path.Join(RepoDir(pkg, arch), name)] = b
			}
			for name, b := range md {
				full := path.Join(RepoDir(pkg, arch), name)
				files[full] = b
				if strings.HasSuffix(name, "repomd.xml") {
					arts = append(arts, Artifact{Path: full, Kind: "repodata", Arch: arch, Distro: dis.Name})
					if o.Sign != nil {
						// dnf's repo_gpgcheck=1 reads repomd.xml.asc
						if files[full+".asc"], err = o.RepoSigner().Armored(b); err != nil {
							return nil, nil, err
						}
						arts = append(arts, Artifact{Path: full + ".asc", Kind: "signature", Arch: arch, Distro: dis.Name})
					}
				}
			}
			noun := "packages"
			if len(infos)+len(h.infos) == 1 {
				noun = "package"
			}
			step("repository %s: %d %s", RepoDir(pkg, arch), len(infos)+len(h.infos), noun)
		}
	}
	return files, arts, nil
}

// runRpmbuild builds p's binary and source RPM from the spec with
// rpmbuild, in a private top directory, reproducibly.
func runRpmbuild(ctx context.Context, pkg model.Packaging, p Package, major int, specName string, spec []byte, tarName string, tarball []byte, built time.Time) (bin, src []byte, err error) {
	if _, err := exec.LookPath("rpmbuild"); err != nil {
		return nil, nil, errors.New("rpmbuild is not installed: install it (Debian: apt-get install rpm; EL: dnf install rpm-build) or use --builder go")
	}
	// The source RPM records the expanded spec, which names the top
	// directory: it must not change from one build to the next, so it is
	// named after the inputs, and a lock lets two identical builds at once
	// take turns instead of sharing it.
	sum := sha256.Sum256(append(append([]byte(strconv.Itoa(major)), spec...), tarball...))
	top := filepath.Join(os.TempDir(), "pglease-rpmbuild-"+hex.EncodeToString(sum[:6]))
	unlock, err := lockPath(ctx, top+".lock")
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	if err := os.RemoveAll(top); err != nil {
		return nil, nil, err
	}
	if err := os.Mkdir(top, 0o700); err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(top)
	for _, d := range []string{"SOURCES", "SPECS"} {
		if err := os.MkdirAll(filepath.Join(top, d), 0o755); err != nil {
			return nil, nil, err
		}
	}
	specPath := filepath.Join(top, "SPECS", specName)
	if err := os.WriteFile(specPath, spec, 0o644); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(top, "SOURCES", tarName), tarball, 0o644); err != nil {
		return nil, nil, err
	}
	// the source RPM records these files' times as they are on disk
	for _, f := range []string{specPath, filepath.Join(top, "SOURCES", tarName)} {
		if err := os.Chtimes(f, built, built); err != nil {
			return nil, nil, err
		}
	}
	args := []string{"-ba", "--quiet"}
	for _, def := range RpmbuildDefines(pkg, major) {
		args = append(args, "--define", def)
	}
	args = append(args, "--define", "_topdir "+top, specPath)
	cmd := exec.CommandContext(ctx, "rpmbuild", args...)
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+strconv.FormatInt(built.Unix(), 10), "TZ=UTC", "LC_ALL=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("rpmbuild for PostgreSQL %d: %w\n%s", major, err, out)
	}
	if bin, err = os.ReadFile(filepath.Join(top, "RPMS", "noarch", p.FileName())); err != nil {
		return nil, nil, fmt.Errorf("rpmbuild for PostgreSQL %d did not write %s: %w", major, p.FileName(), err)
	}
	if src, err = os.ReadFile(filepath.Join(top, "SRPMS", p.SourceRPM())); err != nil {
		return nil, nil, fmt.Errorf("rpmbuild for PostgreSQL %d did not write %s: %w", major, p.SourceRPM(), err)
	}
	return bin, src, nil
}

// RpmbuildDefines are the macros a build host passes to rpmbuild for one
// major, for the same packages the pure Go builder writes.
func RpmbuildDefines(pkg model.Packaging, major int) []string {
	return []string{
		"pgmajorversion " + strconv.Itoa(major),
		"dist " + pkg.Dist,
		"_buildhost " + BuildHost,
		"use_source_date_epoch_as_buildtime 1",
		"clamp_mtime_to_source_date_epoch 1",
		"_binary_payload w9.gzdio",
		"_source_payload w9.gzdio",
	}
}
