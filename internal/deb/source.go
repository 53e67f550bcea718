package deb

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/sign"
	"github.com/pglease/pglease-gen/internal/sourcetree"
)

// Source is a Debian source package in the 3.0 (quilt) format, as
// dpkg-source -b writes it and apt.postgresql.org publishes it: upstream's
// tarball unchanged as the .orig.tar.gz, the packaging as .debian.tar.xz,
// and the .dsc that names both with their checksums.
type Source struct {
	Name    string // pg-lease
	Version string // 0.4.0-1PGSTY~bookworm, from debian/changelog
	Dsc     []byte
	Files   map[string][]byte // by file name: the .dsc, the orig tarball, the debian tarball
	// Control is the .dsc's fields without its signature, for the Sources
	// index.
	Control []byte
}

// DscName is the .dsc's file name.
func (s Source) DscName() string { return s.Name + "_" + s.Version + ".dsc" }

// OrigName is the name Debian gives upstream's tarball of version v:
// pg-lease_0.4.0.orig.tar.gz.
func OrigName(source, v string) string { return source + "_" + v + ".orig.tar.gz" }

// MakeSource makes the source package of the debian/ files (by path,
// debian/...) over upstream's tarball orig of version upstream, every
// debian.tar member dated when, the .dsc clear-signed with s when given.
func MakeSource(source, upstream string, orig []byte, debian render.Files, when time.Time, s *sign.Signer) (Source, error) {
	version, err := changelogVersion(debian["debian/changelog"])
	if err != nil {
		return Source{}, err
	}
	if !strings.HasPrefix(version, upstream+"-") {
		return Source{}, fmt.Errorf("debian/changelog's version %s is not of upstream version %s", version, upstream)
	}
	deb, err := DebianTar(debian, when)
	if err != nil {
		return Source{}, err
	}
	src := Source{Name: source, Version: version, Files: map[string][]byte{
		OrigName(source, upstream):                orig,
		source + "_" + version + ".debian.tar.xz": deb,
	}}
	control, err := dscFields(debian, version)
	if err != nil {
		return Source{}, err
	}
	names := []string{OrigName(source, upstream), source + "_" + version + ".debian.tar.xz"}
	src.Control = append(control, checksums(src.Files, names)...)
	src.Dsc = src.Control
	if s != nil {
		if src.Dsc, err = s.ClearSigned(src.Control); err != nil {
			return Source{}, err
		}
	}
	src.Files[src.DscName()] = src.Dsc
	return src, nil
}

// checksums are a .dsc's (or a Sources stanza's) Checksums-Sha1,
// Checksums-Sha256 and Files fields for the named files.
func checksums(files map[string][]byte, names []string) []byte {
	var b bytes.Buffer
	for _, f := range []struct {
		field string
		sum   func([]byte) string
	}{
		{"Checksums-Sha1", func(x []byte) string { s := sha1.Sum(x); return hex.EncodeToString(s[:]) }},
		{"Checksums-Sha256", func(x []byte) string { s := sha256.Sum256(x); return hex.EncodeToString(s[:]) }},
		{"Files", func(x []byte) string { s := md5.Sum(x); return hex.EncodeToString(s[:]) }},
	} {
		b.WriteString(f.field + ":\n")
		for _, n := range names {
			fmt.Fprintf(&b, " %s %d %s\n", f.sum(files[n]), len(files[n]), n)
		}
	}
	return b.Bytes()
}

// changelogVersion is the version of debian/changelog's newest entry.
func changelogVersion(changelog []byte) (string, error) {
	first, _, _ := strings.Cut(string(changelog), "\n")
	_, rest, ok := strings.Cut(first, " (")
	v, _, ok2 := strings.Cut(rest, ")")
	if !ok || !ok2 || v == "" {
		return "", fmt.Errorf("debian/changelog: no version in its first line %q", first)
	}
	return v, nil
}

// paragraphs reads a deb822 file: each paragraph's fields in order, a
// field's continuation lines joined to it with newlines.
func paragraphs(b []byte) [][][2]string {
	var out [][][2]string
	for _, para := range strings.Split(strings.TrimSpace(string(b)), "\n\n") {
		var fields [][2]string
		for _, l := range strings.Split(para, "\n") {
			if strings.HasPrefix(l, "#") {
				continue
			}
			if (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")) && len(fields) > 0 {
				fields[len(fields)-1][1] += "\n" + l
				continue
			}
			k, v, _ := strings.Cut(l, ":")
			fields = append(fields, [2]string{k, strings.TrimSpace(v)})
		}
		out = append(out, fields)
	}
	return out
}

func field(fields [][2]string, name string) string {
	for _, f := range fields {
		if strings.EqualFold(f[0], name) {
			return f[1]
		}
	}
	return ""
}

// relations is a relationship field folded onto one line as dpkg writes
// it in a .dsc: "a, b (>= 1) <!nocheck>, c".
func relations(v string) string {
	var out []string
	for _, r := range strings.Split(v, ",") {
		if r = strings.Join(strings.Fields(r), " "); r != "" {
			out = append(out, r)
		}
	}
	return strings.Join(out, ", ")
}

// dscFields are the .dsc's fields before the checksums, in dpkg-source's
// order, from debian/control, debian/source/format and debian/tests/control.
func dscFields(debian render.Files, version string) ([]byte, error) {
	paras := paragraphs(debian["debian/control"])
	if len(paras) < 2 {
		return nil, fmt.Errorf("debian/control: no binary package")
	}
	src := paras[0]
	var binaries, list []string
	archs := map[string]bool{}
	for _, p := range paras[1:] {
		name := field(p, "Package")
		binaries = append(binaries, name)
		arch := field(p, "Architecture")
		archs[arch] = true
		list = append(list, fmt.Sprintf(" %s deb %s %s arch=%s", name, field(src, "Section"), field(src, "Priority"), arch))
	}
	var arch []string
	for a := range archs {
		arch = append(arch, a)
	}
	slices.Sort(arch)
	var triggers []string
	for _, p := range paragraphs(debian["debian/tests/control"]) {
		for _, d := range strings.Split(field(p, "Depends"), ",") {
			d = strings.TrimSpace(d)
			name, _, _ := strings.Cut(d, " ")
			if name == "" || strings.HasPrefix(name, "@") || slices.Contains(binaries, name) || slices.Contains(triggers, name) {
				continue
			}
			triggers = append(triggers, name)
		}
	}
	slices.Sort(triggers)
	var b bytes.Buffer
	put := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	put("Format", strings.TrimSpace(string(debian["debian/source/format"])))
	put("Source", field(src, "Source"))
	put("Binary", strings.Join(binaries, ", "))
	put("Architecture", strings.Join(arch, " "))
	put("Version", version)
	put("Maintainer", field(src, "Maintainer"))
	put("Homepage", field(src, "Homepage"))
	put("Standards-Version", field(src, "Standards-Version"))
	if debian["debian/tests/control"] != nil {
		put("Testsuite", "autopkgtest")
		put("Testsuite-Triggers", strings.Join(triggers, ", "))
	}
	put("Build-Depends", relations(field(src, "Build-Depends")))
	b.WriteString("Package-List:\n" + strings.Join(list, "\n") + "\n")
	return b.Bytes(), nil
}

// DebianTar packs the debian/ files as dpkg-source's debian.tar.xz: GNU
// tar (as GNU tar writes it: no device numbers in other entries), names
// sorted with each directory (a trailing /) before what it holds, owner
// 0:0 without names, every entry dated when, the archive padded to tar's
// 10240-byte records, then xz. The tar inside is dpkg-source's byte for
// byte; the xz stream is not liblzma's (the source package's checksums
// are of these bytes).
func DebianTar(debian render.Files, when time.Time) ([]byte, error) {
	var raw bytes.Buffer
	mtime := when.UTC().Unix()
	inside := render.Files{}
	for name, b := range debian {
		rel, ok := strings.CutPrefix(name, "debian/")
		if !ok {
			return nil, fmt.Errorf("debian.tar: %s is not in debian/", name)
		}
		inside[rel] = b
	}
	err := sourcetree.EachEntry(inside, "debian", func(d string) error {
		return gnuEntry(&raw, d+"/", '5', 0o755, mtime, nil)
	}, func(name, full string) error {
		mode := int64(0o644)
		if sourcetree.Executables[full] {
			mode = 0o755
		}
		return gnuEntry(&raw, full, '0', mode, mtime, inside[name])
	})
	if err != nil {
		return nil, err
	}
	raw.Write(make([]byte, 1024)) // the end: two empty blocks
	if pad := raw.Len() % 10240; pad != 0 {
		raw.Write(make([]byte, 10240-pad))
	}
	return xzip(raw.Bytes())
}

// gnuEntry writes one GNU tar header (and body) as GNU tar does: octal
// fields NUL-terminated, the "ustar  " magic, empty owner names and
// device numbers, the checksum as six digits, NUL and space.
func gnuEntry(w *bytes.Buffer, name string, typ byte, mode, mtime int64, body []byte) error {
	if len(name) > 99 {
		return fmt.Errorf("debian.tar: %s is too long for a tar name", name)
	}
	var h [512]byte
	copy(h[0:], name)
	copy(h[100:], fmt.Sprintf("%07o\x00", mode))
	copy(h[108:], "0000000\x00")
	copy(h[116:], "0000000\x00")
	copy(h[124:], fmt.Sprintf("%011o\x00", len(body)))
	copy(h[136:], fmt.Sprintf("%011o\x00", mtime))
	copy(h[148:], "        ")
	h[156] = typ
	copy(h[257:], "ustar  \x00")
	sum := 0
	for _, c := range h {
		sum += int(c)
	}
	copy(h[148:], fmt.Sprintf("%06o\x00 ", sum))
	w.Write(h[:])
	w.Write(body)
	if pad := len(body) % 512; pad != 0 {
		w.Write(make([]byte, 512-pad))
	}
	return nil
}

// sourceStanza is the Sources index's stanza of src, as apt-ftparchive
// writes one: the .dsc's fields with Source as Package, the .dsc itself
// among the files, and the pool directory.
func sourceStanza(src Source, dir string) []byte {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(string(src.Control), "\n"), "\n") {
		if strings.HasPrefix(line, "Checksums-Sha1:") {
			break
		}
		if v, ok := strings.CutPrefix(line, "Source: "); ok {
			line = "Package: " + v
		}
		b.WriteString(line + "\n")
	}
	names := []string{src.DscName()}
	for n := range src.Files {
		if n != src.DscName() {
			names = append(names, n)
		}
	}
	slices.Sort(names[1:])
	b.Write(checksums(src.Files, names))
	fmt.Fprintf(&b, "Directory: %s\nPriority: source\n", dir)
	return []byte(b.String())
}

// sourcesIndex writes the suite's main/source/Sources and Sources.gz into
// files, returning their paths below the suite for its Release.
func sourcesIndex(files render.Files, suite string, srcs []Source, pool string) ([]string, error) {
	var stanzas []string
	for _, s := range srcs {
		stanzas = append(stanzas, string(sourceStanza(s, pool)))
	}
	idx := []byte(strings.Join(stanzas, "\n"))
	idxGz, err := gz(idx)
	if err != nil {
		return nil, err
	}
	dir := path.Join(Component, "source")
	files[path.Join(suite, dir, "Sources")] = idx
	files[path.Join(suite, dir, "Sources.gz")] = idxGz
	return []string{path.Join(dir, "Sources"), path.Join(dir, "Sources.gz")}, nil
}
