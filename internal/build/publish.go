package build

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pglease/pglease-gen/internal/render"
)

// marker marks a directory Publish wrote, which it may replace.
const marker = ".pglease-build"

// CheckOut says whether Publish may replace dir: a missing or empty
// directory, or one that Publish wrote. The build calls it before the
// work, so that a refused --out costs nothing.
func CheckOut(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--out %s: %w", dir, err)
	case len(entries) == 0:
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, marker)); err != nil {
		return fmt.Errorf("%s is not empty and was not written by pglease-gen build; choose another --out or empty it", dir)
	}
	return nil
}

// Publish replaces dir with files: it writes them into a new directory
// beside dir and swaps it in, so dir is never half-written. It refuses to
// replace a non-empty directory that it did not write.
func Publish(dir string, files render.Files) error {
	dir = filepath.Clean(dir)
	if err := CheckOut(dir); err != nil {
		return err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".new-")
	if err != nil {
		return err
	}
	all := render.Files{marker: []byte("written by pglease-gen build; replaced by the next build\n")}
	for n, b := range files {
		all[n] = b
	}
	if err := render.Write(tmp, all); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	old := ""
	if _, err := os.Stat(dir); err == nil {
		old = tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			os.RemoveAll(tmp)
			return err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			os.Rename(old, dir)
		}
		os.RemoveAll(tmp)
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}
