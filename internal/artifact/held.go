package artifact

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/pglease/pglease-gen/internal/deb"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/rpm"
)

// ReadHeld reads the output of an earlier build that build --into adds
// to: every file it published there.
func ReadHeld(dir string) (render.Files, error) {
	if !IsOutput(dir) {
		return nil, fmt.Errorf("--into %s is not the output of pglease-gen build (it has no %s): build into it with --out first, or name the directory a build published", dir, marker)
	}
	if err := CheckOut(dir); err != nil {
		return nil, err
	}
	held := render.Files{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == marker {
			return nil
		}
		held[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("--into %s: %w", dir, err)
	}
	return held, nil
}

// publishedOnce says whether name is a file that, once published, a
// later build may write again only with the same bytes (a host that
// installed or cached it must be able to trust the name): the packages,
// source packages, tarballs and zips.
func publishedOnce(name string) bool {
	for _, s := range []string{".deb", ".rpm", ".dsc", ".debian.tar.xz", ".orig.tar.gz", ".zip"} {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return !strings.Contains(name, "/") && strings.HasSuffix(name, ".tar.gz")
}

// heldVersions are the upstream versions of the packages in held, by
// file: each .deb, .rpm, source package, tarball, zip and image of a
// version.
func heldVersions(ext model.Extension, held render.Files) (map[string]string, error) {
	of := map[string]string{}
	for name, b := range held {
		base := path.Base(name)
		v := ""
		switch {
		case strings.HasSuffix(name, ".deb"):
			control, err := deb.ReadControl(b)
			if err != nil {
				return nil, fmt.Errorf("--into: %s: %w", name, err)
			}
			v = deb.ControlField(control, "Version")
			if i := strings.LastIndex(v, "-"); i > 0 {
				v = v[:i]
			}
		case strings.HasSuffix(name, ".rpm"):
			in, err := rpm.ReadInfo(base, b)
			if err != nil {
				return nil, fmt.Errorf("--into: %w", err)
			}
			v = in.Version
		case strings.HasSuffix(name, ".orig.tar.gz"):
			_, v, _ = strings.Cut(strings.TrimSuffix(base, ".orig.tar.gz"), "_")
		case strings.HasSuffix(name, ".dsc"), strings.HasSuffix(name, ".debian.tar.xz"):
			_, v, _ = strings.Cut(base, "_")
			if i := strings.LastIndex(v, "-"); i > 0 {
				v = v[:i]
			}
		case !strings.Contains(name, "/") && (strings.HasSuffix(name, ".tar.gz") || strings.HasSuffix(name, ".zip")):
			v = strings.TrimPrefix(strings.TrimSuffix(strings.TrimSuffix(name, ".tar.gz"), ".zip"), ext.Name+"-")
		case strings.HasPrefix(name, ImagesDir+"/"+ext.Name+"-"):
			// cnpg/pg_lease-0.5.1-17-trixie/... and its archives
			v, _, _ = strings.Cut(strings.TrimPrefix(name, ImagesDir+"/"+ext.Name+"-"), "-")
		}
		if v != "" {
			of[name] = v
		}
	}
	return of, nil
}

// hold adds to files (this build's) what o.Held (the tree --into names,
// without the versions to drop) keeps: every file but those this build
// writes again, the indices of the repositories it rebuilt (it wrote
// them from the held packages and its own) and the checksums. A
// published-once file this build writes with other bytes is an error. It
// returns the versions the tree then holds. versions are the held
// files' (heldVersions).
func hold(o Options, files render.Files, versions map[string]string) ([]string, error) {
	// the index directories and images this build wrote again
	roots := map[string]bool{}
	for n := range files {
		if strings.Contains(n, "/repodata/") || strings.HasPrefix(n, deb.RepoDir+"/dists/") || strings.HasPrefix(n, ImagesDir+"/") {
			roots[indexRoot(n)] = true
		}
	}
	rebuilt := func(name string) bool {
		for r := range roots {
			if strings.HasPrefix(name, r) {
				return true
			}
		}
		return false
	}
	for _, name := range o.Held.Names() {
		b := o.Held[name]
		if nb, ok := files[name]; ok {
			if publishedOnce(name) && !bytes.Equal(nb, b) {
				return nil, fmt.Errorf("--into: %s is published with other bytes than this build's: a published file is never replaced (hosts have it cached and installed); raise the release (--release, --release-date, --release-note) to build the version again", name)
			}
			continue
		}
		if name == "SHA256SUMS" || name == "SHA256SUMS.asc" || rebuilt(name) {
			continue
		}
		files[name] = b
	}
	out := []string{o.Ext.Version()}
	for name, v := range versions {
		if _, ok := files[name]; ok && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		if model.VersionLess(a, b) {
			return -1
		}
		return strings.Compare(a, b) // (equal, or a version of no known form)
	})
	return out, nil
}

// indexRoot is the directory an index file or image belongs to: a
// suite's dists/CODENAME/, a tree's repodata/, an image's directory.
func indexRoot(name string) string {
	parts := strings.Split(name, "/")
	switch {
	case strings.HasPrefix(name, deb.RepoDir+"/dists/"):
		return strings.Join(parts[:3], "/") + "/"
	case strings.HasPrefix(name, ImagesDir+"/"):
		if len(parts) > 2 {
			return strings.Join(parts[:2], "/") + "/"
		}
		return name
	}
	for i, p := range parts {
		if p == "repodata" {
			return strings.Join(parts[:i+1], "/") + "/"
		}
	}
	return name
}

// checkHeld refuses to add a build to a tree it cannot join: one signed
// by another key, a signed tree without a signature or an unsigned one
// with; and a version to drop that the tree does not hold, or that this
// build makes.
func checkHeld(o Options, versions map[string]string) error {
	key, signed := o.Held[o.Ext.RPMKeyFile()]
	packaged := slices.ContainsFunc(o.Held.Names(), func(n string) bool {
		return strings.HasSuffix(n, ".rpm") || strings.HasSuffix(n, ".deb")
	})
	switch {
	case signed && o.Sign == nil:
		return fmt.Errorf("--into: the tree is signed (%s): sign this build with its key (--sign-key), or its repositories would lose their signatures", o.Ext.RPMKeyFile())
	case !signed && packaged && o.Sign != nil:
		return fmt.Errorf("--into: the tree's packages are unsigned: a signed repository of them would not install with signature checks on; build without --sign-key, or build every version signed into a new --out")
	case signed:
		ents, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(key))
		if err != nil || len(ents) != 1 {
			return fmt.Errorf("--into: the tree's %s is not one OpenPGP public key (%v)", o.Ext.RPMKeyFile(), err)
		}
		if fp := strings.ToUpper(fmt.Sprintf("%x", ents[0].PrimaryKey.Fingerprint)); fp != o.Sign.Fingerprint() {
			return fmt.Errorf("--into: the tree is signed by key %s and --sign-key is %s: hosts trust the tree's key, so sign with it (changing the key of a published tree is not supported: publish a new tree)", fp, o.Sign.Fingerprint())
		}
	}
	var have []string
	for _, v := range versions {
		if !slices.Contains(have, v) {
			have = append(have, v)
		}
	}
	slices.Sort(have)
	for _, v := range o.Drop {
		switch {
		case v == o.Ext.Version():
			return fmt.Errorf("--drop %s: this build makes %s; drop a version the tree holds", v, v)
		case !slices.Contains(have, v):
			return fmt.Errorf("--drop %s: the tree holds no packages of %s (it holds %s)", v, v, strings.Join(have, ", "))
		}
	}
	return nil
}
