// Package build is pglease-gen build: the source tarball, the RPMs and
// their repositories (package rpm), the debs and their apt repository
// (package deb), and the checksums, in memory; Publish writes them.
package build

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/pglease/pglease-gen/internal/deb"
	"github.com/pglease/pglease-gen/internal/dist"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/rpm"
)

// Options configure Build.
type Options struct {
	Ext    model.Extension
	Pkg    model.Packaging
	Src    fs.FS
	Majors []int
	Suffix string
	// Builders names the native tools to build with: rpmbuild, dpkg, or
	// both; empty (or "go") writes every package in pure Go.
	Builders []string
	Time     time.Time // SOURCE_DATE_EPOCH: build time and every mtime
	Step     func(format string, args ...any)
}

// ParseBuilders reads --builder: go, rpmbuild, dpkg, or a comma list of
// rpmbuild and dpkg.
func ParseBuilders(s string) ([]string, error) {
	var out []string
	for _, b := range strings.Split(s, ",") {
		switch b = strings.TrimSpace(b); b {
		case rpm.PureGo:
		case rpm.Rpmbuild, deb.Dpkg:
			out = append(out, b)
		default:
			return nil, fmt.Errorf("unknown --builder %q: use go, rpmbuild, dpkg or rpmbuild,dpkg", b)
		}
	}
	return out, nil
}

// Build makes everything build writes, with SHA256SUMS over it.
func Build(ctx context.Context, o Options) (render.Files, []dist.Artifact, error) {
	if len(o.Majors) == 0 {
		return nil, nil, errors.New("no PostgreSQL majors to build for")
	}
	rb, db := rpm.PureGo, deb.PureGo
	if slices.Contains(o.Builders, rpm.Rpmbuild) {
		rb = rpm.Rpmbuild
	}
	if slices.Contains(o.Builders, deb.Dpkg) {
		db = deb.Dpkg
	}
	files, arts, err := rpm.Build(ctx, rpm.Options{Ext: o.Ext, Pkg: o.Pkg, Src: o.Src, Majors: o.Majors, Suffix: o.Suffix, Builder: rb, Time: o.Time, Step: o.Step})
	if err != nil {
		return nil, nil, err
	}
	debFiles, debArts, err := deb.Build(ctx, deb.Options{Ext: o.Ext, Pkg: o.Pkg, Src: o.Src, Majors: o.Majors, Suffix: o.Suffix, Builder: db, Time: o.Time, Step: o.Step})
	if err != nil {
		return nil, nil, err
	}
	for n, b := range debFiles {
		files[n] = b
	}
	arts = append(arts, debArts...)
	files["SHA256SUMS"] = Sums(files)
	arts = append(arts, dist.Artifact{Path: "SHA256SUMS", Kind: "checksums"})
	for i := range arts {
		b := files[arts[i].Path]
		sum := sha256.Sum256(b)
		arts[i].Size, arts[i].SHA256 = len(b), hex.EncodeToString(sum[:])
	}
	return files, arts, nil
}

// Sums is the SHA256SUMS of files, as sha256sum writes it.
func Sums(files render.Files) []byte {
	var sums strings.Builder
	for _, name := range files.Names() {
		sum := sha256.Sum256(files[name])
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), name)
	}
	return []byte(sums.String())
}
