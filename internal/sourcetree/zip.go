package sourcetree

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"io"
	"io/fs"
	"time"

	"github.com/pglease/pglease-gen/internal/render"
)

// Zip packs files below top/ as PGXN's release zip (what pgxn-bundle
// makes): the tarball's tree, sorted, directories included, every entry
// dated mtime (in the zip's local time field, read as UTC), mode 0644
// (0755 for directories and Executables), deflated; it depends only on
// its input and mtime.
func Zip(files render.Files, top string, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.BestCompression)
	})
	when := mtime.UTC().Truncate(2 * time.Second) // DOS times have 2 s steps
	err := EachEntry(files, top, func(d string) error {
		h := &zip.FileHeader{Name: d + "/", Method: zip.Store, Modified: when}
		h.SetMode(fs.ModeDir | 0o755)
		_, err := zw.CreateHeader(h)
		return err
	}, func(name, full string) error {
		h := &zip.FileHeader{Name: full, Method: zip.Deflate, Modified: when}
		mode := 0o644
		if Executables[name] {
			mode = 0o755
		}
		h.SetMode(fs.FileMode(mode))
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		_, err = w.Write(files[name])
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
