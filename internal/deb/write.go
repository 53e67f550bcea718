package deb

import (
	"archive/tar"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/ulikunitz/xz"
)

// Pack writes the deb of p: an ar archive of debian-binary, control.tar.xz
// and data.tar.xz, as dpkg-deb writes it; every time is p.BuildTime.
func Pack(p Package) ([]byte, error) {
	ext := ".xz"
	if p.Gzip {
		ext = ".gz"
	}
	control, err := packTar(p.BuildTime, []string{"./"}, []File{{Path: "/control", Body: p.Control()}, {Path: "/md5sums", Body: p.MD5Sums()}}, p.Gzip)
	if err != nil {
		return nil, fmt.Errorf("deb %s: control.tar: %w", p.Name, err)
	}
	data, err := packTar(p.BuildTime, p.dirs(), p.Files, p.Gzip)
	if err != nil {
		return nil, fmt.Errorf("deb %s: data.tar: %w", p.Name, err)
	}
	var out bytes.Buffer
	out.WriteString("!<arch>\n")
	for _, m := range []struct {
		name string
		body []byte
	}{{"debian-binary", []byte("2.0\n")}, {"control.tar" + ext, control}, {"data.tar" + ext, data}} {
		arMember(&out, m.name, p.BuildTime, m.body)
	}
	return out.Bytes(), nil
}

// arMember writes one member of a common-format ar archive, owned by root
// with mode 100644, padded to an even length.
func arMember(w *bytes.Buffer, name string, mtime time.Time, body []byte) {
	fmt.Fprintf(w, "%-16s%-12s%-6s%-6s%-8s%-10s`\n", name, strconv.FormatInt(mtime.Unix(), 10), "0", "0", "100644", strconv.Itoa(len(body)))
	w.Write(body)
	if len(body)%2 == 1 {
		w.WriteByte('\n')
	}
}

// packTar is a GNU tar of the directories (./-relative, with a trailing
// slash) and files (absolute paths, stored ./-relative), in sorted order,
// owned by root, compressed with xz (or gzip).
func packTar(mtime time.Time, dirs []string, files []File, useGzip bool) ([]byte, error) {
	type entry struct {
		name string
		body []byte
		dir  bool
		mode int64
		link string
		when time.Time
	}
	var es []entry
	for _, d := range dirs {
		es = append(es, entry{name: d, dir: true})
	}
	for _, f := range files {
		es = append(es, entry{name: "." + f.Path, body: f.Body, mode: f.Mode, link: f.Link, when: f.MTime})
	}
	sortEntries := func(a, b entry) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	}
	slices.SortFunc(es, sortEntries)
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), ModTime: mtime, Uname: "root", Gname: "root", Typeflag: tar.TypeReg, Format: tar.FormatGNU}
		if !e.when.IsZero() {
			h.ModTime = e.when
		}
		switch {
		case e.dir:
			h.Mode, h.Typeflag = 0o755, tar.TypeDir
		case e.link != "":
			h.Mode, h.Typeflag, h.Linkname, h.Size, e.body = 0o777, tar.TypeSymlink, e.link, 0, nil
		case e.mode != 0:
			h.Mode = e.mode
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if useGzip {
		return gz(raw.Bytes())
	}
	return xzip(raw.Bytes())
}

// xzip compresses b as xz with a CRC64 check, as dpkg does.
func xzip(b []byte) ([]byte, error) {
	var out bytes.Buffer
	zw, err := xz.WriterConfig{CheckSum: xz.CRC64}.NewWriter(&out)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
