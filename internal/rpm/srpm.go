package rpm

import (
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/cavaliergopher/cpio"
)

// Main header tags of the source RPM (rpm's lib/rpmtag.h).
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
	tagRequireFlags   = 1048
	tagRequireName    = 1049
	tagRequireVersion = 1050
	tagFileINodes     = 1096
	tagFileDevices    = 1095
	tagFileLangs      = 1097
	tagFileVerify     = 1045
	tagSourcePackage  = 1106
	tagDirIndexes     = 1116
	tagBaseNames      = 1117
	tagDirNames       = 1118
	tagPayloadFormat  = 1124
	tagPayloadComp    = 1125
	tagPayloadFlags   = 1126
	tagFileDigestAlgo = 5011
	tagPayloadDigest  = 5092
	tagPayloadAlgo    = 5093

	sigSize        = 1000
	sigMD5         = 1004
	sigPayloadSize = 1007
	sigSHA1        = 269
	sigSHA256      = 273

	fileSpec       = 1 << 5 // RPMFILE_SPECFILE
	senseRPMLib    = 1 << 24
	senseLessEqual = 0x02 | 0x08
	digestSHA256   = 8
)

// Source is a file of the source RPM: the spec or a source tarball.
type Source struct {
	Name string
	Body []byte
	Spec bool
}

// PackSource writes the source RPM of p: the spec and the tarball, as
// `rpmbuild -bs` would, for `rpmbuild --rebuild` on a build host.
func PackSource(p Package, files []Source) ([]byte, error) {
	mtime := int32(p.BuildTime.Unix())
	var payload bytes.Buffer
	zw, err := gzip.NewWriterLevel(&payload, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	var raw counter
	raw.w = zw
	cw := cpio.NewWriter(&raw)
	h := &header{}
	var sizes, mtimes, flags, inodes, devices, verify, dirIdx []int32
	var modes []uint16
	var rdevs []int16
	var names, digests, links, users, groups, langs, sourceNames []string
	total := 0
	for i, f := range files {
		err := cw.WriteHeader(&cpio.Header{Name: f.Name, Mode: cpio.TypeReg | 0o644, Size: int64(len(f.Body)), Links: 1, Inode: int64(i + 1), ModTime: p.BuildTime})
		if err == nil {
			_, err = cw.Write(f.Body)
		}
		if err != nil {
			return nil, fmt.Errorf("source rpm payload: %w", err)
		}
		sum := sha256.Sum256(f.Body)
		sizes = append(sizes, int32(len(f.Body)))
		mtimes = append(mtimes, mtime)
		fl := int32(0)
		if f.Spec {
			fl = fileSpec
		} else {
			sourceNames = append(sourceNames, f.Name)
		}
		flags = append(flags, fl)
		inodes = append(inodes, int32(i+1))
		devices = append(devices, 1)
		verify = append(verify, -1)
		dirIdx = append(dirIdx, 0)
		modes = append(modes, 0o100644)
		rdevs = append(rdevs, 0)
		names = append(names, f.Name)
		digests = append(digests, hex.EncodeToString(sum[:]))
		links = append(links, "")
		users = append(users, "root")
		groups = append(groups, "root")
		langs = append(langs, "")
		total += len(f.Body)
	}
	if err := cw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	psum := sha256.Sum256(payload.Bytes())

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
	h.i18n(tagGroupName, "Unspecified")
	h.strs(tagSource, sourceNames...)
	h.str(tagURL, p.URL)
	h.str(tagOS, "linux")
	h.str(tagArch, "noarch")
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
	h.int32s(tagRequireFlags, senseRPMLib|senseLessEqual, senseRPMLib|senseLessEqual)
	h.strs(tagRequireName, "rpmlib(CompressedFileNames)", "rpmlib(FileDigests)")
	h.strs(tagRequireVersion, "3.0.4-1", "4.6.0-1")
	h.int32s(tagSourcePackage, 1)
	h.int32s(tagDirIndexes, dirIdx...)
	h.strs(tagBaseNames, names...)
	h.strs(tagDirNames, "")
	h.str(tagPayloadFormat, "cpio")
	h.str(tagPayloadComp, "gzip")
	h.str(tagPayloadFlags, "9")
	h.int32s(tagFileDigestAlgo, digestSHA256)
	h.strs(tagPayloadDigest, hex.EncodeToString(psum[:]))
	h.int32s(tagPayloadAlgo, digestSHA256)
	var times []int32
	var who, text []string
	for _, c := range p.Changelog {
		times = append(times, int32(c.Time().Unix()+12*3600))
		who = append(who, p.Maintainer+" - "+c.EVR(p.Suffix))
		text = append(text, "- "+strings.Join(c.Lines, "\n- "))
	}
	h.int32s(tagChangelogTime, times...)
	h.strs(tagChangelogName, who...)
	h.strs(tagChangelogText, text...)

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
	out.Write(lead(p.NVR(), true))
	out.Write(sb)
	out.Write(make([]byte, (8-len(sb)%8)%8))
	out.Write(main)
	out.Write(payload.Bytes())
	return out.Bytes(), nil
}

// counter counts the bytes written through it.
type counter struct {
	w io.Writer
	n int
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}
