// Package artifact is what pglease-gen build makes: the source tarball, the RPMs and
// their repositories (package rpm), the debs and their apt repository
// (package deb), the checksums and, when signing or given a repository
// URL, the public key and the .repo and .sources host files, in memory;
// Publish writes them.
package artifact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pglease/pglease-gen/internal/deb"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/oci"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/rpm"
	"github.com/pglease/pglease-gen/internal/sign"
	"github.com/pglease/pglease-gen/internal/sourcetree"
)

// ImagesDir holds the CloudNativePG extension images in the build output.
const ImagesDir = "cnpg"

// Options configure Build.
type Options struct {
	Ext    model.Extension
	Pkg    model.Packaging
	Images model.ImageVolumes // the CloudNativePG images; zero: model.CNPG
	Src    fs.FS
	Majors []int
	// Distros are the distributions to build for; none: every one.
	Distros []model.Distro
	Suffix  string
	// Builders names the native tools to build with: rpmbuild, dpkg, or
	// both; empty (or "go") writes every package in pure Go.
	Builders []string
	Time     time.Time // SOURCE_DATE_EPOCH: build time and every mtime
	Step     func(format string, args ...any)
	Sign     *sign.Signer // nil: unsigned
	// RepoURL is where the output will be published; given, the build
	// writes a .repo and a .sources file pointing there.
	RepoURL string
	// Held is the tree of an earlier build that this one adds to (build
	// --into, ReadHeld): the output keeps its files, its repositories
	// list its packages beside this build's. Drop are upstream versions
	// whose files the output leaves out.
	Held render.Files
	Drop []string
	// SignedAt is when the repositories' metadata and SHA256SUMS are
	// signed (build: now); zero: Time, as the packages.
	SignedAt time.Time
}

// ParseBuilders reads --builder: go, rpmbuild, dpkg, or a comma list of
// rpmbuild and dpkg.
func ParseBuilders(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, b := range strings.Split(s, ",") {
		b = strings.TrimSpace(b)
		switch {
		case seen[b]:
			return nil, fmt.Errorf("--builder %q: names %s twice", s, b)
		case b == rpm.PureGo && s != rpm.PureGo:
			return nil, fmt.Errorf("--builder %q: go is the pure-Go builder of everything, alone; the native tools are rpmbuild, dpkg or rpmbuild,dpkg", s)
		case b == rpm.PureGo:
		case b == rpm.Rpmbuild || b == deb.Dpkg:
			out = append(out, b)
		default:
			return nil, fmt.Errorf("unknown --builder %q: use go, rpmbuild, dpkg or rpmbuild,dpkg", b)
		}
		seen[b] = true
	}
	return out, nil
}

// Build makes everything build writes, with SHA256SUMS over it.
func Build(ctx context.Context, o Options) (render.Files, []sourcetree.Artifact, error) {
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
	repoURL, err := ParseRepoURL(o.RepoURL)
	if err != nil {
		return nil, nil, err
	}
	distros, err := Buildable(o.Distros, o.Majors)
	if err != nil {
		return nil, nil, err
	}
	var versions map[string]string // of the held files, read once
	if o.Held != nil {
		if versions, err = heldVersions(o.Ext, o.Held); err != nil {
			return nil, nil, err
		}
		if err := checkHeld(o, versions); err != nil {
			return nil, nil, err
		}
		kept := render.Files{}
		for n, b := range o.Held {
			if !slices.Contains(o.Drop, versions[n]) {
				kept[n] = b
			}
		}
		o.Held = kept
	} else if len(o.Drop) > 0 {
		return nil, nil, errors.New("--drop removes a version from the tree --into names: give --into")
	}
	files, arts, err := rpm.Build(ctx, rpm.Options{Ext: o.Ext, Pkg: o.Pkg, Src: o.Src, Majors: o.Majors, Distros: distros, Suffix: o.Suffix, Builder: rb, Time: o.Time, Step: o.Step, Sign: o.Sign, SignedAt: o.SignedAt, Held: o.Held})
	if err != nil {
		return nil, nil, err
	}
	debFiles, debArts, err := deb.Build(ctx, deb.Options{Ext: o.Ext, Pkg: o.Pkg, Src: o.Src, Majors: o.Majors, Distros: distros, Suffix: o.Suffix, Builder: db, Time: o.Time, Step: o.Step, Sign: o.Sign, SignedAt: o.SignedAt, Held: o.Held})
	if err != nil {
		return nil, nil, err
	}
	for n, b := range debFiles {
		files[n] = b
	}
	arts = append(arts, debArts...)
	// PGXN's release zip: upstream's tree (the tarball's), its META.json
	// checked against PGXN's meta spec first
	sources, err := sourcetree.Upstream(o.Ext, o.Src)
	if err != nil {
		return nil, nil, err
	}
	if err := sourcetree.CheckMETA(sources["META.json"], sources); err != nil {
		return nil, nil, err
	}
	if files[o.Ext.PGXNZip()], err = sourcetree.Zip(sources, o.Ext.SourceDir(), sourcetree.UpstreamTime(o.Ext)); err != nil {
		return nil, nil, err
	}
	arts = append(arts, sourcetree.Artifact{Path: o.Ext.PGXNZip(), Kind: "pgxn-zip"})
	step := o.Step
	if step == nil {
		step = func(string, ...any) {}
	}
	step("PGXN release zip %s", o.Ext.PGXNZip())
	// CloudNativePG's image volumes, for the majors that have
	// extension_control_path
	ext, err := render.InstallFiles(o.Ext, o.Src)
	if err != nil {
		return nil, nil, err
	}
	img := o.Images
	if img.Repository == "" {
		img = model.CNPG
	}
	imgFiles, imgs, err := oci.Images(o.Ext, img, ext, sources["LICENSE"], o.Majors, o.Time, ImagesDir)
	if err != nil {
		return nil, nil, err
	}
	for n, b := range imgFiles {
		files[n] = b
	}
	for _, im := range imgs {
		arts = append(arts, sourcetree.Artifact{Path: path.Join(im.Dir, "index.json"), Kind: "oci-layout", Major: im.Major})
		for _, arch := range model.MachineArches {
			arts = append(arts, sourcetree.Artifact{Path: im.Archives[arch], Kind: "docker-archive", Major: im.Major, Arch: arch})
		}
		step("CloudNativePG image %s: %s/ (OCI layout, linux/amd64 and linux/arm64) and a docker save tarball per platform", im.Ref, im.Dir)
	}
	var key []byte
	keyURL := ""
	if o.Sign != nil {
		key = o.Sign.PublicKey()
		files[o.Ext.RPMKeyFile()] = key
		arts = append(arts, sourcetree.Artifact{Path: o.Ext.RPMKeyFile(), Kind: "public-key"})
		keyURL = repoURL + "/" + o.Ext.RPMKeyFile()
	}
	if repoURL != "" {
		// one .repo for every EL release (dnf fills in $releasever and
		// $basearch), and a .sources per codename: deb822 has no variable
		// for the release, so a host takes the file of its own
		if len(model.OfFormat(distros, model.RPM)) > 0 {
			// its id names the vendor, so that a host can tell (and
			// exclude or prioritise) one vendor's repository from another's
			files[o.Ext.RepoFile()] = rpm.RepoFile(o.Ext.Name+"-"+strings.ToLower(o.Suffix), o.Ext.Name+" from "+o.Suffix+" for EL$releasever ($basearch)",
				repoURL+"/"+rpm.HostRepoDir(o.Pkg), keyURL)
			arts = append(arts, sourcetree.Artifact{Path: o.Ext.RepoFile(), Kind: "repo-file"})
		}
		for _, d := range model.OfFormat(distros, model.Deb) {
			name := o.Ext.SourcesFileFor(d.Name)
			files[name] = deb.Sources(o.Pkg.For(d), o.Ext.DebSource(), repoURL+"/"+deb.RepoDir, key)
			arts = append(arts, sourcetree.Artifact{Path: name, Kind: "repo-file", Distro: d.Name})
		}
	}
	if o.Held != nil {
		versions, err := hold(o, files, versions)
		if err != nil {
			return nil, nil, err
		}
		step("the tree holds %s: every version's packages in the pools and the indices", strings.Join(versions, ", "))
	}
	files["SHA256SUMS"] = Sums(files)
	arts = append(arts, sourcetree.Artifact{Path: "SHA256SUMS", Kind: "checksums"})
	if o.Sign != nil {
		// gpg --verify SHA256SUMS.asc SHA256SUMS, then sha256sum -c
		s := o.Sign
		if !o.SignedAt.IsZero() {
			s = s.At(o.SignedAt)
		}
		if files["SHA256SUMS.asc"], err = s.Armored(files["SHA256SUMS"]); err != nil {
			return nil, nil, err
		}
		arts = append(arts, sourcetree.Artifact{Path: "SHA256SUMS.asc", Kind: "signature"})
	}
	for i := range arts {
		b := files[arts[i].Path]
		sum := sha256.Sum256(b)
		arts[i].Size, arts[i].SHA256 = len(b), hex.EncodeToString(sum[:])
	}
	return files, arts, nil
}

// ParseRepoURL checks --repo-url: an absolute http, https or file URL
// without query or fragment; the result has no trailing slash. "" stays "".
func ParseRepoURL(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("repository URL %q: %s; give the absolute http(s) or file URL of the published output, such as https://packages.example.org/pg_lease", s, why)
	}
	// what apt's sources and dnf's baseurl both read as one plain URI: dnf
	// expands $variables and splits on spaces and commas, apt refuses
	// spaces and quotes
	if i := strings.IndexFunc(s, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune("$,\"'`\\{}|^<>", r)
	}); i >= 0 {
		return bad(fmt.Sprintf("holds %q, which apt or dnf would read as more than a URL (percent-encode it)", s[i:i+1]))
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return bad(err.Error())
	case u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "file":
		return bad("not http, https or file")
	case u.Opaque != "":
		return bad("a relative file URL (file:///absolute/path)")
	case u.User != nil:
		return bad("holds a user name or password, which would be published in every host file")
	case u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(s, "?#"):
		return bad("has a query or fragment")
	case u.Scheme != "file" && u.Hostname() == "":
		return bad("has no host")
	case u.Scheme == "file" && u.Host != "":
		return bad("a file URL names a host (file:///absolute/path)")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return bad(fmt.Sprintf("port %s is not 1 to 65535", p))
		}
	}
	return strings.TrimRight(s, "/"), nil
}

// Buildable are the distributions of ds (every one of the model when
// empty) that get at least one of majors; none is an error that says
// which majors each of them gets.
func Buildable(ds []model.Distro, majors []int) ([]model.Distro, error) {
	if len(ds) == 0 {
		ds = model.Distros
	}
	var out []model.Distro
	var gets []string
	for _, d := range ds {
		if len(d.MajorsOf(majors)) > 0 {
			out = append(out, d)
		}
		all := d.MajorsOf(model.PgLease.Majors)
		gets = append(gets, fmt.Sprintf("%s gets %d-%d", d.Name, all[0], all[len(all)-1]))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("nothing to build: no distribution asked for gets PostgreSQL %s (%s); choose other --pg or --distro",
			strings.Trim(strings.Join(strings.Fields(fmt.Sprint(majors)), ","), "[]"), strings.Join(gets, ", "))
	}
	return out, nil
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
