package deb

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/sign"
)

// RepoDir is the apt repository's directory in the build output.
const RepoDir = "apt"

// Component is the repository's only component.
const Component = "main"

// PoolPath is where a source package's debs sit in the pool, as Debian
// lays it out: pool/main/p/pg-lease/.
func PoolPath(source string) string {
	return path.Join("pool", Component, source[:1], source)
}

// Repo writes the apt repository of the debs (file name -> bytes) and of
// the source packages srcs: the pool, a Packages and Packages.gz per
// architecture (each deb is Architecture: all, so it is in every one), a
// Sources and Sources.gz, each index also under by-hash/SHA256/ (apt
// fetches by hash what the Release it read names, so a host that read
// the old Release while the tree was replaced gets the old index, not a
// hash mismatch), and the suite's Release with the size and SHA-256 of
// every index, its Origin the vendor (a host pins the vendor's packages
// by it: Pin: release o=ACME) and its Label the vendor's and the
// source's names. Each Packages stanza is the deb's own control file
// plus where the deb is and its checksums; each Sources stanza the
// .dsc's fields with the pool directory.
func Repo(pkg model.Packaging, vendor, source string, debs map[string][]byte, srcs []Source, when time.Time) (render.Files, error) {
	files := render.Files{}
	for _, s := range srcs {
		for n, b := range s.Files {
			files[path.Join(RepoDir, PoolPath(source), n)] = b
		}
	}
	names := make([]string, 0, len(debs))
	for n := range debs {
		names = append(names, n)
	}
	slices.Sort(names)
	stanzas := map[string][]string{} // by architecture
	for _, n := range names {
		control, err := ReadControl(debs[n])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		file := path.Join(PoolPath(source), n)
		files[path.Join(RepoDir, file)] = debs[n]
		md := md5.Sum(debs[n])
		sh := sha256.Sum256(debs[n])
		stanza := strings.TrimRight(string(control), "\n") + fmt.Sprintf("\nFilename: %s\nSize: %d\nMD5sum: %s\nSHA256: %s\n",
			file, len(debs[n]), hex.EncodeToString(md[:]), hex.EncodeToString(sh[:]))
		// Architecture: all is in every architecture's index, others in their own
		arch := controlField(control, "Architecture")
		for _, a := range pkg.DebArches {
			if arch == "all" || arch == a {
				stanzas[a] = append(stanzas[a], stanza)
			}
		}
	}
	dist := path.Join(RepoDir, "dists", pkg.DebCodename)
	var index []string
	for _, arch := range pkg.DebArches {
		packages := []byte(strings.Join(stanzas[arch], "\n"))
		packagesGz, err := gz(packages)
		if err != nil {
			return nil, err
		}
		dir := path.Join(Component, "binary-"+arch)
		for name, b := range map[string][]byte{"Packages": packages, "Packages.gz": packagesGz} {
			files[path.Join(dist, dir, name)] = b
			index = append(index, path.Join(dir, name))
		}
	}
	if len(srcs) > 0 {
		names, err := sourcesIndex(files, dist, srcs, PoolPath(source))
		if err != nil {
			return nil, err
		}
		index = append(index, names...)
	}
	slices.Sort(index)
	origin, label := source, source
	if vendor != "" {
		origin, label = vendor, vendor+" "+source
	}
	var rel strings.Builder
	fmt.Fprintf(&rel, "Origin: %s\nLabel: %s\nSuite: %s\nCodename: %s\nDate: %s\nArchitectures: %s\nComponents: %s\nDescription: %s packages for %s %s\nAcquire-By-Hash: yes\nSHA256:\n",
		origin, label, pkg.DebCodename, pkg.DebCodename, when.UTC().Format(time.RFC1123), strings.Join(pkg.DebArches, " "), Component, source, pkg.DebOS, pkg.DebRelease)
	for _, name := range index {
		b := files[path.Join(dist, name)]
		sum := sha256.Sum256(b)
		fmt.Fprintf(&rel, " %s %d %s\n", hex.EncodeToString(sum[:]), len(b), name)
		files[path.Join(dist, path.Dir(name), "by-hash", "SHA256", hex.EncodeToString(sum[:]))] = b
	}
	files[path.Join(dist, "Release")] = []byte(rel.String())
	return files, nil
}

// SignRepo adds to each suite of an apt repository its detached
// Release.gpg and its cleartext-signed InRelease.
func SignRepo(files render.Files, s *sign.Signer) error {
	for _, name := range files.Names() {
		if path.Base(name) != "Release" {
			continue
		}
		dir := path.Dir(name)
		var err error
		if files[path.Join(dir, "Release.gpg")], err = s.Armored(files[name]); err != nil {
			return err
		}
		if files[path.Join(dir, "InRelease")], err = s.ClearSigned(files[name]); err != nil {
			return err
		}
	}
	return nil
}

// Sources is a deb822 .sources file for the repository at uri (the URL of
// its apt/ directory); given an armored public key it is embedded as
// Signed-By, so the one file is all a host needs.
func Sources(pkg model.Packaging, source, uri string, key []byte) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s packages for %s %s (%s), and their sources (apt-get source)\nTypes: deb deb-src\nURIs: %s\nSuites: %s\nComponents: %s\n",
		source, pkg.DebOS, pkg.DebRelease, pkg.DebCodename, uri, pkg.DebCodename, Component)
	if len(key) == 0 {
		b.WriteString("Trusted: yes\n")
		return []byte(b.String())
	}
	b.WriteString("Signed-By:\n" + render.DebianText(string(key)) + "\n")
	return []byte(b.String())
}

// ControlField is the value of a single-line field of a control file
// ("" when it has none).
func ControlField(control []byte, name string) string { return controlField(control, name) }

// controlField is the value of a single-line field of a control file.
func controlField(control []byte, name string) string {
	for _, l := range strings.Split(string(control), "\n") {
		if v, ok := strings.CutPrefix(l, name+": "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
