package rpm

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"path"
	"slices"
	"strings"

	rpmutils "github.com/sassoftware/go-rpmutils"

	"github.com/pglease/pglease-gen/internal/render"
)

// Info is what the repository metadata says about one package, read back
// from the package's own header, whichever builder wrote it.
type Info struct {
	File        string // file name in the repository
	SHA256      string
	Size        int64
	Name        string
	Epoch       string
	Version     string
	Release     string
	Arch        string
	Summary     string
	Description string
	Packager    string
	URL         string
	License     string
	Vendor      string
	Group       string
	BuildHost   string
	SourceRPM   string
	BuildTime   int
	Installed   int64
	Archive     int64
	HeaderStart int
	HeaderEnd   int
	Provides    []Relation
	Requires    []Relation // without rpmlib() features
	Files       []PackageFile
	Changelog   []ChangelogEntry
}

// Relation is a dependency or capability.
type Relation struct {
	Name, Flags, Epoch, Version, Release string
}

// PackageFile is a path the package owns.
type PackageFile struct {
	Path  string
	Dir   bool
	Mode  int
	Flags int
	Size  int64
	User  string
	Group string
}

// ChangelogEntry is one changelog entry as stored in the header.
type ChangelogEntry struct {
	Author string
	Time   int
	Text   string
}

// ReadInfo reads a package's header.
func ReadInfo(file string, b []byte) (Info, error) {
	h, err := rpmutils.ReadHeader(bytes.NewReader(b))
	if err != nil {
		return Info{}, fmt.Errorf("read %s: %w", file, err)
	}
	sum := sha256.Sum256(b)
	in := Info{File: file, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(b)), Epoch: "0"}
	str := func(tag int) string { s, _ := h.GetString(tag); return s }
	in.Name, in.Version, in.Release, in.Arch = str(rpmutils.NAME), str(rpmutils.VERSION), str(rpmutils.RELEASE), str(rpmutils.ARCH)
	if e, err := h.GetInt(rpmutils.EPOCH); err == nil {
		in.Epoch = fmt.Sprint(e)
	}
	in.Summary, in.Description, in.Packager, in.URL = str(rpmutils.SUMMARY), str(rpmutils.DESCRIPTION), str(rpmutils.PACKAGER), str(rpmutils.URL)
	in.License, in.Vendor, in.Group, in.BuildHost, in.SourceRPM = str(rpmutils.LICENSE), str(rpmutils.VENDOR), str(rpmutils.GROUP), str(rpmutils.BUILDHOST), str(rpmutils.SOURCERPM)
	in.BuildTime, _ = h.GetInt(rpmutils.BUILDTIME)
	if n, err := h.GetUint64Fallback(rpmutils.SIZE, rpmutils.LONGSIZE); err == nil {
		in.Installed = int64(n)
	}
	if n, err := h.PayloadSize(); err == nil {
		in.Archive = n
	}
	r := h.GetRange()
	in.HeaderStart, in.HeaderEnd = r.Start, r.End
	if in.Provides, err = relations(h, rpmutils.PROVIDENAME, rpmutils.PROVIDEFLAGS, rpmutils.PROVIDEVERSION); err != nil {
		return in, fmt.Errorf("read %s: %w", file, err)
	}
	if in.Requires, err = relations(h, rpmutils.REQUIRENAME, rpmutils.REQUIREFLAGS, rpmutils.REQUIREVERSION); err != nil {
		return in, fmt.Errorf("read %s: %w", file, err)
	}
	files, err := h.GetFiles()
	if err != nil {
		return in, fmt.Errorf("read %s: files: %w", file, err)
	}
	for _, f := range files {
		in.Files = append(in.Files, PackageFile{Path: f.Name(), Dir: f.Mode()&0o170000 == 0o40000, Mode: f.Mode(),
			Flags: f.Flags(), Size: f.Size(), User: f.UserName(), Group: f.GroupName()})
	}
	slices.SortFunc(in.Files, func(a, b PackageFile) int { return strings.Compare(a.Path, b.Path) })
	times, _ := h.GetInts(rpmutils.CHANGELOGTIME)
	names, _ := h.GetStrings(rpmutils.CHANGELOGNAME)
	texts, _ := h.GetStrings(rpmutils.CHANGELOGTEXT)
	for i := range min(len(times), len(names), len(texts)) {
		in.Changelog = append(in.Changelog, ChangelogEntry{Author: names[i], Time: times[i], Text: texts[i]})
	}
	return in, nil
}

func relations(h *rpmutils.RpmHeader, nameTag, flagTag, verTag int) ([]Relation, error) {
	names, err := h.GetStrings(nameTag)
	if err != nil {
		return nil, nil // the package has none
	}
	flags, _ := h.GetInts(flagTag)
	vers, _ := h.GetStrings(verTag)
	var out []Relation
	for i, n := range names {
		if strings.HasPrefix(n, "rpmlib(") {
			continue
		}
		r := Relation{Name: n}
		if i < len(flags) {
			r.Flags = senseName(flags[i])
		}
		if i < len(vers) && vers[i] != "" {
			evr := vers[i]
			r.Epoch = "0"
			if e, rest, ok := strings.Cut(evr, ":"); ok {
				r.Epoch, evr = e, rest
			}
			r.Version, r.Release, _ = strings.Cut(evr, "-")
		}
		out = append(out, r)
	}
	return out, nil
}

func senseName(f int) string {
	switch f & 0x0e {
	case 0x08:
		return "EQ"
	case 0x02:
		return "LT"
	case 0x04:
		return "GT"
	case 0x0a:
		return "LE"
	case 0x0c:
		return "GE"
	}
	return ""
}

// XML documents of the repository metadata (the createrepo format).
type (
	xVersion struct {
		Epoch string `xml:"epoch,attr"`
		Ver   string `xml:"ver,attr"`
		Rel   string `xml:"rel,attr"`
	}
	xEntry struct {
		Name    string `xml:"name,attr"`
		Flags   string `xml:"flags,attr,omitempty"`
		Epoch   string `xml:"epoch,attr,omitempty"`
		Version string `xml:"ver,attr,omitempty"`
		Release string `xml:"rel,attr,omitempty"`
	}
	xFile struct {
		Type string `xml:"type,attr,omitempty"`
		Path string `xml:",chardata"`
	}
	xPrimaryPkg struct {
		Type     string   `xml:"type,attr"`
		Name     string   `xml:"name"`
		Arch     string   `xml:"arch"`
		Version  xVersion `xml:"version"`
		Checksum struct {
			Type  string `xml:"type,attr"`
			PkgID string `xml:"pkgid,attr"`
			Value string `xml:",chardata"`
		} `xml:"checksum"`
		Summary     string `xml:"summary"`
		Description string `xml:"description"`
		Packager    string `xml:"packager"`
		URL         string `xml:"url"`
		Time        struct {
			File  int `xml:"file,attr"`
			Build int `xml:"build,attr"`
		} `xml:"time"`
		Size struct {
			Package   int64 `xml:"package,attr"`
			Installed int64 `xml:"installed,attr"`
			Archive   int64 `xml:"archive,attr"`
		} `xml:"size"`
		Location struct {
			Href string `xml:"href,attr"`
		} `xml:"location"`
		Format struct {
			License     string `xml:"rpm:license"`
			Vendor      string `xml:"rpm:vendor"`
			Group       string `xml:"rpm:group"`
			BuildHost   string `xml:"rpm:buildhost"`
			SourceRPM   string `xml:"rpm:sourcerpm"`
			HeaderRange struct {
				Start int `xml:"start,attr"`
				End   int `xml:"end,attr"`
			} `xml:"rpm:header-range"`
			Provides []xEntry `xml:"rpm:provides>rpm:entry,omitempty"`
			Requires []xEntry `xml:"rpm:requires>rpm:entry,omitempty"`
		} `xml:"format"`
	}
	xPrimary struct {
		XMLName  xml.Name      `xml:"metadata"`
		NS       string        `xml:"xmlns,attr"`
		RPMNS    string        `xml:"xmlns:rpm,attr"`
		Packages int           `xml:"packages,attr"`
		Pkgs     []xPrimaryPkg `xml:"package"`
	}
	xFilesPkg struct {
		PkgID   string   `xml:"pkgid,attr"`
		Name    string   `xml:"name,attr"`
		Arch    string   `xml:"arch,attr"`
		Version xVersion `xml:"version"`
		Files   []xFile  `xml:"file"`
	}
	xFilelists struct {
		XMLName  xml.Name    `xml:"filelists"`
		NS       string      `xml:"xmlns,attr"`
		Packages int         `xml:"packages,attr"`
		Pkgs     []xFilesPkg `xml:"package"`
	}
	xChange struct {
		Author string `xml:"author,attr"`
		Date   int    `xml:"date,attr"`
		Text   string `xml:",chardata"`
	}
	xOtherPkg struct {
		PkgID     string    `xml:"pkgid,attr"`
		Name      string    `xml:"name,attr"`
		Arch      string    `xml:"arch,attr"`
		Version   xVersion  `xml:"version"`
		Changelog []xChange `xml:"changelog"`
	}
	xOther struct {
		XMLName  xml.Name    `xml:"otherdata"`
		NS       string      `xml:"xmlns,attr"`
		Packages int         `xml:"packages,attr"`
		Pkgs     []xOtherPkg `xml:"package"`
	}
	xData struct {
		Type     string `xml:"type,attr"`
		Checksum struct {
			Type  string `xml:"type,attr"`
			Value string `xml:",chardata"`
		} `xml:"checksum"`
		OpenChecksum struct {
			Type  string `xml:"type,attr"`
			Value string `xml:",chardata"`
		} `xml:"open-checksum"`
		Location struct {
			Href string `xml:"href,attr"`
		} `xml:"location"`
		Timestamp int `xml:"timestamp"`
		Size      int `xml:"size"`
		OpenSize  int `xml:"open-size"`
	}
	xRepomd struct {
		XMLName  xml.Name `xml:"repomd"`
		NS       string   `xml:"xmlns,attr"`
		RPMNS    string   `xml:"xmlns:rpm,attr"`
		Revision int      `xml:"revision"`
		Data     []xData  `xml:"data"`
	}
)

// RepoFile is a dnf .repo file for a repository at baseurl. Given the URL
// of the public key it checks the packages' and the metadata's signatures
// (gpgcheck, repo_gpgcheck); without one it checks neither.
func RepoFile(id, name, baseurl, keyurl string) []byte {
	s := fmt.Sprintf("[%s]\nname=%s\nbaseurl=%s\nenabled=1\n", id, name, baseurl)
	if keyurl == "" {
		return []byte(s + "gpgcheck=0\nrepo_gpgcheck=0\n")
	}
	return []byte(s + "gpgcheck=1\nrepo_gpgcheck=1\ngpgkey=" + keyurl + "\n")
}

// Repodata writes a repository's metadata (repodata/repomd.xml and the
// gzipped primary, filelists and other documents, named by checksum) for
// the packages, whose files sit at the repository's top. The output
// depends only on the packages and the timestamp.
func Repodata(pkgs []Info, timestamp int) (render.Files, error) {
	pkgs = slices.Clone(pkgs)
	slices.SortFunc(pkgs, func(a, b Info) int { return strings.Compare(a.File, b.File) })
	primary := xPrimary{NS: "http://linux.duke.edu/metadata/common", RPMNS: "http://linux.duke.edu/metadata/rpm", Packages: len(pkgs)}
	files := xFilelists{NS: "http://linux.duke.edu/metadata/filelists", Packages: len(pkgs)}
	other := xOther{NS: "http://linux.duke.edu/metadata/other", Packages: len(pkgs)}
	for _, p := range pkgs {
		v := xVersion{p.Epoch, p.Version, p.Release}
		var x xPrimaryPkg
		x.Type, x.Name, x.Arch, x.Version = "rpm", p.Name, p.Arch, v
		x.Checksum.Type, x.Checksum.PkgID, x.Checksum.Value = "sha256", "YES", p.SHA256
		x.Summary, x.Description, x.Packager, x.URL = p.Summary, p.Description, p.Packager, p.URL
		x.Time.File, x.Time.Build = p.BuildTime, p.BuildTime
		x.Size.Package, x.Size.Installed, x.Size.Archive = p.Size, p.Installed, p.Archive
		x.Location.Href = p.File
		f := &x.Format
		f.License, f.Vendor, f.Group, f.BuildHost, f.SourceRPM = p.License, p.Vendor, p.Group, p.BuildHost, p.SourceRPM
		f.HeaderRange.Start, f.HeaderRange.End = p.HeaderStart, p.HeaderEnd
		for _, r := range p.Provides {
			f.Provides = append(f.Provides, xEntry(r))
		}
		for _, r := range p.Requires {
			f.Requires = append(f.Requires, xEntry(r))
		}
		primary.Pkgs = append(primary.Pkgs, x)
		fp := xFilesPkg{PkgID: p.SHA256, Name: p.Name, Arch: p.Arch, Version: v}
		for _, pf := range p.Files {
			xf := xFile{Path: pf.Path}
			if pf.Dir {
				xf.Type = "dir"
			}
			fp.Files = append(fp.Files, xf)
		}
		files.Pkgs = append(files.Pkgs, fp)
		op := xOtherPkg{PkgID: p.SHA256, Name: p.Name, Arch: p.Arch, Version: v}
		for _, c := range p.Changelog {
			op.Changelog = append(op.Changelog, xChange{c.Author, c.Time, c.Text})
		}
		other.Pkgs = append(other.Pkgs, op)
	}
	out := render.Files{}
	md := xRepomd{NS: "http://linux.duke.edu/metadata/repo", RPMNS: "http://linux.duke.edu/metadata/rpm", Revision: timestamp}
	for _, doc := range []struct {
		kind string
		v    any
	}{{"primary", primary}, {"filelists", files}, {"other", other}} {
		plain, err := marshal(doc.v)
		if err != nil {
			return nil, fmt.Errorf("repodata %s: %w", doc.kind, err)
		}
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		zw.Write(plain)
		if err := zw.Close(); err != nil {
			return nil, err
		}
		sum, open := sha256.Sum256(gz.Bytes()), sha256.Sum256(plain)
		name := path.Join("repodata", hex.EncodeToString(sum[:])+"-"+doc.kind+".xml.gz")
		out[name] = gz.Bytes()
		d := xData{Type: doc.kind, Timestamp: timestamp, Size: gz.Len(), OpenSize: len(plain)}
		d.Checksum.Type, d.Checksum.Value = "sha256", hex.EncodeToString(sum[:])
		d.OpenChecksum.Type, d.OpenChecksum.Value = "sha256", hex.EncodeToString(open[:])
		d.Location.Href = name
		md.Data = append(md.Data, d)
	}
	b, err := marshal(md)
	if err != nil {
		return nil, err
	}
	out["repodata/repomd.xml"] = b
	return out, nil
}

func marshal(v any) ([]byte, error) {
	b, err := xml.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(append([]byte(xml.Header), b...), '\n'), nil
}
