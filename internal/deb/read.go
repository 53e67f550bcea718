package deb

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ulikunitz/xz"
)

// Member is one entry of a deb's control.tar or data.tar, as tar records it.
type Member struct {
	Name         string
	Mode         int64
	Type         byte
	Uid, Gid     int
	Uname, Gname string
	Size         int64
	MTime        int64
	Body         []byte
	Link         string // a symbolic or hard link's target
}

// Archive is a deb taken apart: its ar members in order, and the entries
// of its control and data tarballs.
type Archive struct {
	ArNames []string
	ArTimes []int64
	Control []Member
	Data    []Member
}

// Read takes a deb apart (ar, then the two tarballs).
func Read(b []byte) (Archive, error) { return read(b, true) }

// ReadControl reads only a deb's control file (it leaves data.tar packed).
func ReadControl(b []byte) ([]byte, error) {
	a, err := read(b, false)
	if err != nil {
		return nil, err
	}
	return a.ControlFile()
}

func read(b []byte, withData bool) (Archive, error) {
	var a Archive
	if !bytes.HasPrefix(b, []byte("!<arch>\n")) {
		return a, fmt.Errorf("not an ar archive")
	}
	rest := b[8:]
	for len(rest) > 0 {
		if len(rest) < 60 {
			return a, fmt.Errorf("truncated ar header")
		}
		h := rest[:60]
		name := strings.TrimRight(string(h[:16]), " ")
		mtime, _ := strconv.ParseInt(strings.TrimSpace(string(h[16:28])), 10, 64)
		size, err := strconv.Atoi(strings.TrimSpace(string(h[48:58])))
		if err != nil || 60+size > len(rest) {
			return a, fmt.Errorf("bad ar member %q", name)
		}
		body := rest[60 : 60+size]
		rest = rest[60+size:]
		if size%2 == 1 && len(rest) > 0 {
			rest = rest[1:]
		}
		a.ArNames = append(a.ArNames, name)
		a.ArTimes = append(a.ArTimes, mtime)
		switch name {
		case "control.tar.xz", "data.tar.xz", "control.tar.gz", "data.tar.gz":
			if !withData && strings.HasPrefix(name, "data.") {
				continue
			}
			ms, err := readTar(body, strings.HasSuffix(name, ".xz"))
			if err != nil {
				return a, fmt.Errorf("%s: %w", name, err)
			}
			if strings.HasPrefix(name, "control.") {
				a.Control = ms
			} else {
				a.Data = ms
			}
		}
	}
	return a, nil
}

// ControlFile is the deb's control file.
func (a Archive) ControlFile() ([]byte, error) {
	for _, m := range a.Control {
		if m.Name == "./control" {
			return m.Body, nil
		}
	}
	return nil, fmt.Errorf("no ./control in control.tar")
}

func readTar(b []byte, isXZ bool) ([]Member, error) {
	var zr io.Reader
	var err error
	if isXZ {
		zr, err = xz.NewReader(bytes.NewReader(b))
	} else {
		zr, err = gzip.NewReader(bytes.NewReader(b))
	}
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	var out []Member
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		out = append(out, Member{h.Name, h.Mode, h.Typeflag, h.Uid, h.Gid, h.Uname, h.Gname, h.Size, h.ModTime.Unix(), body, h.Linkname})
	}
}
