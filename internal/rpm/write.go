package rpm

import (
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/cavaliergopher/cpio"

	"github.com/pglease/pglease-gen/internal/model"
)

// Main header tags (rpm's lib/rpmtag.h).
const (
	tagI18NTable      = 100
	tagName           = 1000
	tagVersion        = 1001
	tagRelease        = 1002
	tagSummary        = 1004
	tagDescription    = 1005
	tagBuildTime      = 1006
	tagBuildHost      = 1007
	tagSize           = 1009
	tagVendor         = 1011
	tagLicense        = 1014
	tagPackager       = 1015
	tagGroupName      = 1016
	tagSource         = 1018
	tagURL            = 1020
	tagOS             = 1021
	tagArch           = 1022
	tagFileSizes      = 1028
	tagFileModes      = 1030
	tagFileRDevs      = 1033
	tagFileMTimes     = 1034
	tagFileDigests    = 1035
	tagFileLinkTos    = 1036
	tagFileFlags      = 1037
	tagFileUserName   = 1039
	tagFileGroupName  = 1040
	tagSourceRPM      = 1044
	tagFileVerify     = 1045
	tagProvideName    = 1047
	tagRequireFlags   = 1048
	tagRequireName    = 1049
	tagRequireVersion = 1050
	tagChangelogTime  = 1080
	tagChangelogName  = 1081
	tagChangelogText  = 1082
	tagFileDevices    = 1095
	tagFileINodes     = 1096
	tagFileLangs      = 1097
	tagBuildArchs     = 1089
	tagSourcePackage  = 1106
	tagProvideFlags   = 1112
	tagProvideVersion = 1113
	tagDirIndexes     = 1116
	tagBaseNames      = 1117
	tagDirNames       = 1118
	tagPayloadFormat  = 1124
	tagPayloadComp    = 1125
	tagPayloadFlags   = 1126
	tagFileDigestAlgo = 5011
	tagPayloadDigest  = 5092
	tagPayloadAlgo    = 5093
	tagPayloadDigestU = 5097 // of the uncompressed payload

	sigSize        = 1000
	sigMD5         = 1004
	sigPayloadSize = 1007
	sigSHA1        = 269
	sigSHA256      = 273

	fileDoc        = 1 << 1 // RPMFILE_DOC
	fileSpec       = 1 << 5 // RPMFILE_SPECFILE
	fileLicense    = 1 << 7 // RPMFILE_LICENSE
	senseEqual     = 0x08
	senseRPMLib    = 1 << 24
	senseLessEqual = 0x02 | senseEqual
	digestSHA256   = 8
)

// The rpmlib() features every package needs, and the one a binary package
// with ./-prefixed payload names adds, as rpmbuild records them.
var (
	rpmlibBase   = [][2]string{{"rpmlib(CompressedFileNames)", "3.0.4-1"}, {"rpmlib(FileDigests)", "4.6.0-1"}}
	rpmlibPrefix = [2]string{"rpmlib(PayloadFilesHavePrefix)", "4.0-1"}
)

// Source is a file of the source RPM: the spec or a source tarball.
type Source struct {
	Name string
	Body []byte
	Spec bool
}

// member is one file of a package as the header and the payload hold it.
type member struct {
	path  string // in the header
	mode  uint32 // type and permission bits
	body  []byte // contents, or a symbolic link's target
	link  string
	flags int32
}

// Pack writes the binary RPM of p. Payload names are ./-relative, as
// rpmbuild writes them, so that `rpm2cpio x.rpm | cpio -idm` unpacks into
// the current directory.
func Pack(p Package) ([]byte, error) {
	var ms []member
	for _, f := range p.Files {
		m := member{path: f.Path, mode: 0o100000 | f.Mode, body: f.Body}
		switch {
		case f.Dir:
			m.mode, m.body = 0o40000|f.Mode, nil
		case f.Link != "":
			m.mode, m.body, m.link = 0o120777, []byte(f.Link), f.Link
		}
		switch f.Kind {
		case Doc:
			m.flags = fileDoc
		case License:
			m.flags = fileLicense
		}
		ms = append(ms, m)
	}
	return write(p, false, ms)
}

// PackSource writes the source RPM of p: the spec and the tarball, as
// `rpmbuild -bs` would, for `rpmbuild --rebuild` on a build host. Source
// packages name their files without a directory.
func PackSource(p Package, files []Source) ([]byte, error) {
	var ms []member
	for _, f := range files {
		m := member{path: f.Name, mode: 0o100644, body: f.Body}
		if f.Spec {
			m.flags = fileSpec
		}
		ms = append(ms, m)
	}
	return write(p, true, ms)
}

// write lays out the lead, the signature, the header and the gzip cpio
// payload of a package with the members ms, sorted by path.
func write(p Package, source bool, ms []member) ([]byte, error) {
	// rpm finds payload entries in the header by binary search on the path
	ms = slices.Clone(ms)
	slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.path, b.path) })
	for i := 1; i < len(ms); i++ {
		if ms[i].path == ms[i-1].path {
			return nil, fmt.Errorf("rpm %s: %s twice", p.Name, ms[i].path)
		}
	}
	mtime := int32(p.BuildTime.Unix())
	when := p.BuildTime // a source RPM's files are the build's
	if !source {
		when = p.payloadTime()
	}
	fileTime := int32(when.Unix())
	var payload bytes.Buffer
	zw, err := gzip.NewWriterLevel(&payload, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	raw := &counter{w: zw, h: sha256.New()}
	cw := cpio.NewWriter(raw)
	var sizes, mtimes, flags, inodes, devices, verify, dirIdx []int32
	var modes []uint16
	var rdevs []int16
	var bases, digests, links, users, groups, langs, sourceNames, dirs []string
	dirAt := map[string]int32{}
	total := 0
	for i, m := range ms {
		isReg := m.mode&0o170000 == 0o100000
		name, dir, base := m.path, "", m.path
		if !source {
			name = "." + m.path
			dir, base = path.Split(m.path)
		}
		if _, ok := dirAt[dir]; !ok {
			dirAt[dir] = int32(len(dirs))
			dirs = append(dirs, dir)
		}
		err := cw.WriteHeader(&cpio.Header{Name: name, Mode: cpio.FileMode(m.mode), Size: int64(len(m.body)), Links: 1, Inode: int64(i + 1), ModTime: when})
		if err == nil && len(m.body) > 0 {
			_, err = cw.Write(m.body)
		}
		if err != nil {
			return nil, fmt.Errorf("rpm %s: payload %s: %w", p.Name, m.path, err)
		}
		digest := ""
		if isReg {
			sum := sha256.Sum256(m.body)
			digest = hex.EncodeToString(sum[:])
		}
		if source && m.flags&fileSpec == 0 {
			sourceNames = append(sourceNames, m.path)
		}
		total += len(m.body)
		sizes = append(sizes, int32(len(m.body)))
		mtimes = append(mtimes, fileTime)
		flags = append(flags, m.flags)
		inodes = append(inodes, int32(i+1))
		devices = append(devices, 1)
		verify = append(verify, -1)
		dirIdx = append(dirIdx, dirAt[dir])
		modes = append(modes, uint16(m.mode))
		rdevs = append(rdevs, 0)
		bases = append(bases, base)
		digests = append(digests, digest)
		links = append(links, m.link)
		users = append(users, "root")
		groups = append(groups, "root")
		langs = append(langs, "")
	}
	if err := cw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	psum := sha256.Sum256(payload.Bytes())

	h := &header{}
	h.strs(tagI18NTable, "C")
	h.str(tagName, p.Name)
	h.str(tagVersion, p.Version)
	h.str(tagRelease, p.Release)
	h.i18n(tagSummary, p.Summary)
	h.i18n(tagDescription, p.Description)
	h.int32s(tagBuildTime, mtime)
	h.str(tagBuildHost, BuildHost)
	h.int32s(tagSize, int32(total))
	h.str(tagLicense, p.License)
	h.str(tagPackager, p.Maintainer)
	h.str(tagVendor, p.Suffix)
	h.i18n(tagGroupName, "Unspecified")
	h.str(tagURL, p.URL)
	h.str(tagOS, "linux")
	h.int32s(tagFileSizes, sizes...)
	h.uint16s(tagFileModes, modes...)
	h.int16s(tagFileRDevs, rdevs...)
	h.int32s(tagFileMTimes, mtimes...)
	h.strs(tagFileDigests, digests...)
	h.strs(tagFileLinkTos, links...)
	h.int32s(tagFileFlags, flags...)
	h.strs(tagFileUserName, users...)
	h.strs(tagFileGroupName, groups...)
	h.int32s(tagFileVerify, verify...)
	h.int32s(tagFileDevices, devices...)
	h.int32s(tagFileINodes, inodes...)
	h.strs(tagFileLangs, langs...)
	h.int32s(tagDirIndexes, dirIdx...)
	h.strs(tagBaseNames, bases...)
	h.strs(tagDirNames, dirs...)
	h.str(tagPayloadFormat, "cpio")
	h.str(tagPayloadComp, "gzip")
	h.str(tagPayloadFlags, "9")
	h.int32s(tagFileDigestAlgo, digestSHA256)
	h.strs(tagPayloadDigest, hex.EncodeToString(psum[:]))
	h.int32s(tagPayloadAlgo, digestSHA256)
	h.strs(tagPayloadDigestU, hex.EncodeToString(raw.h.Sum(nil)))

	// requirements: the package's own, then the rpmlib() features
	reqNames, reqVers, reqFlags := []string{}, []string{}, []int32{}
	if !source {
		for _, r := range p.Requires {
			reqNames, reqVers, reqFlags = append(reqNames, r), append(reqVers, ""), append(reqFlags, 0)
		}
	}
	features := rpmlibBase
	if !source {
		features = append(features, rpmlibPrefix)
	}
	for _, f := range features {
		reqNames, reqVers, reqFlags = append(reqNames, f[0]), append(reqVers, f[1]), append(reqFlags, senseRPMLib|senseLessEqual)
	}
	h.int32s(tagRequireFlags, reqFlags...)
	h.strs(tagRequireName, reqNames...)
	h.strs(tagRequireVersion, reqVers...)
	if source {
		h.str(tagArch, "noarch")
		// the spec's BuildArch, which koji and mock read from a source
		// RPM to choose where to rebuild it
		h.strs(tagBuildArchs, p.arch())
		h.strs(tagSource, sourceNames...)
		h.int32s(tagSourcePackage, 1)
	} else {
		h.str(tagArch, p.arch())
		h.str(tagSourceRPM, p.SourceRPM())
		h.strs(tagProvideName, p.Name)
		h.int32s(tagProvideFlags, senseEqual)
		h.strs(tagProvideVersion, p.Version+"-"+p.Release)
	}
	var times []int32
	var who, text []string
	for _, c := range p.Changelog {
		times = append(times, int32(c.Day().Unix()))
		who = append(who, c.Who(p.Maintainer)+" - "+c.EVR(p.Suffix))
		text = append(text, strings.Join(model.Bullets(c.Items, "- ", "  ", 80), "\n"))
	}
	if len(times) > 0 {
		h.int32s(tagChangelogTime, times...)
		h.strs(tagChangelogName, who...)
		h.strs(tagChangelogText, text...)
	}

	main, err := h.bytes(regionImmutable)
	if err != nil {
		return nil, err
	}
	sha1sum := sha1.Sum(main)
	sha256sum := sha256.Sum256(main)
	md5sum := md5.New()
	md5sum.Write(main)
	md5sum.Write(payload.Bytes())
	sig := &header{}
	sig.str(sigSHA1, hex.EncodeToString(sha1sum[:]))
	sig.str(sigSHA256, hex.EncodeToString(sha256sum[:]))
	sig.int32s(sigSize, int32(len(main)+payload.Len()))
	sig.bin(sigMD5, md5sum.Sum(nil))
	sig.int32s(sigPayloadSize, int32(raw.n))
	sb, err := sig.bytes(regionSignatures)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Write(lead(p.NVR(), source))
	out.Write(sb)
	out.Write(make([]byte, (8-len(sb)%8)%8))
	out.Write(main)
	out.Write(payload.Bytes())
	return out.Bytes(), nil
}

// counter counts and hashes the bytes written through it.
type counter struct {
	w io.Writer
	h hash.Hash
	n int
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.h.Write(p[:n])
	c.n += n
	return n, err
}
