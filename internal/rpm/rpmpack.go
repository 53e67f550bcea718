package rpm

import (
	"bytes"
	"fmt"
	"time"

	"github.com/google/rpmpack"
)

// Header tags rpmpack has no field for.
const (
	tagChangelogTime = 1080
	tagChangelogName = 1081
	tagChangelogText = 1082
)

// Pack writes the binary RPM of p in pure Go.
func Pack(p Package) ([]byte, error) {
	r, err := rpmpack.NewRPM(rpmpack.RPMMetaData{
		Name: p.Name, Version: p.Version, Release: p.Release, Arch: p.arch(), OS: "linux",
		Summary: p.Summary, Description: p.Description, Licence: p.License, URL: p.URL,
		Group: "Unspecified", BuildHost: BuildHost, Packager: p.Maintainer, Epoch: rpmpack.NoEpoch, BuildTime: p.BuildTime, Compressor: "gzip",
	})
	if err != nil {
		return nil, fmt.Errorf("rpmpack %s: %w", p.Name, err)
	}
	for _, req := range p.Requires {
		if err := r.Requires.Set(req); err != nil {
			return nil, fmt.Errorf("rpmpack %s: requires %s: %w", p.Name, req, err)
		}
	}
	mtime := uint32(p.BuildTime.Unix())
	for _, f := range p.Files {
		typ := rpmpack.GenericFile
		switch f.Kind {
		case Doc:
			typ = rpmpack.DocFile
		case License:
			typ = rpmpack.LicenceFile
		}
		mode, body := uint(f.Mode), f.Body
		switch {
		case f.Dir:
			mode |= 0o40000
		case f.Link != "":
			mode, body = 0o120777, []byte(f.Link)
		}
		r.AddFile(rpmpack.RPMFile{Name: f.Path, Body: body, Mode: mode, Owner: "root", Group: "root", MTime: mtime, Type: typ})
	}
	var times []uint32
	var names, texts []string
	for _, c := range p.Changelog {
		times = append(times, uint32(c.Time().Add(12*time.Hour).Unix()))
		names = append(names, p.Maintainer+" - "+c.EVR(p.Suffix))
		var text bytes.Buffer
		for i, l := range c.Lines {
			if i > 0 {
				text.WriteByte('\n')
			}
			text.WriteString("- " + l)
		}
		texts = append(texts, text.String())
	}
	if len(times) > 0 {
		r.AddCustomTag(tagChangelogTime, rpmpack.EntryUint32(times))
		r.AddCustomTag(tagChangelogName, rpmpack.EntryStringSlice(names))
		r.AddCustomTag(tagChangelogText, rpmpack.EntryStringSlice(texts))
	}
	var out bytes.Buffer
	if err := r.Write(&out); err != nil {
		return nil, fmt.Errorf("rpmpack %s: %w", p.Name, err)
	}
	return out.Bytes(), nil
}
