package artifact

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/pglease/pglease-gen/internal/render"
)

// marker marks a directory Publish wrote, which it may replace.
const marker = ".pglease-build"

// IsOutput reports whether dir is a build's output (Publish wrote it and
// replaces it whole).
func IsOutput(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, marker))
	return err == nil
}

// CheckOut says whether Publish may replace dir: a missing or empty
// directory, or one that Publish wrote. The build calls it before the
// work, so that a refused --out costs nothing.
//
// It also refuses a dir whose parent (the nearest that exists) it cannot
// write, and a build directory holding files the build did not write (a
// file added by hand would be removed without a word).
func CheckOut(dir string) error {
	// (a link to a directory: what is checked and replaced is its target)
	if target, err := filepath.EvalSymlinks(dir); err == nil {
		dir = target
	}
	if mountPoint(dir) {
		return fmt.Errorf("--out %s is a mount point: the build writes a new tree beside the old one and swaps them, which a mount point cannot be; give a directory inside it (--out %s)", dir, filepath.Join(dir, "dist"))
	}
	for p := filepath.Dir(filepath.Clean(dir)); ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil {
			if err := syscall.Access(p, 2 /* W_OK */); err != nil {
				return fmt.Errorf("--out %s: cannot write in %s: %w", dir, p, err)
			}
			// access(2) says yes to root everywhere (/proc too): make and
			// remove a directory there, as the build will
			probe, err := os.MkdirTemp(p, ".pglease-gen-probe-")
			if err != nil {
				return fmt.Errorf("--out %s: cannot make a directory in %s: %v", dir, p, pathErr(err))
			}
			os.Remove(probe)
			break
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--out %s: %w", dir, err)
	case len(entries) == 0:
		return nil
	}
	list, err := os.ReadFile(filepath.Join(dir, marker))
	if err != nil {
		return fmt.Errorf("--out %s is not empty and was not written by pglease-gen build; choose another --out or empty it", dir)
	}
	wrote := map[string]bool{marker: true}
	for _, l := range strings.Split(string(list), "\n") {
		wrote[l] = true
	}
	var added []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if rel, _ := filepath.Rel(dir, p); !wrote[filepath.ToSlash(rel)] {
			added = append(added, rel)
		}
		return nil
	})
	if len(added) > 0 {
		if len(added) > 5 {
			added = append(added[:5], fmt.Sprintf("and %d more", len(added)-5))
		}
		return fmt.Errorf("--out %s holds files an earlier build did not write (%s): the build replaces the directory whole; move them, or choose another --out",
			dir, strings.Join(added, ", "))
	}
	return nil
}

// pathErr is err without the path it names (a temporary name of ours
// means nothing to the user).
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Publish replaces dir with files: it writes them into a new directory
// beside dir and swaps it in, so dir is never half-written. It refuses to
// replace a non-empty directory that it did not write.
func Publish(dir string, files render.Files) error {
	return PublishContext(context.Background(), dir, files)
}

// PublishContext is Publish that gives up, leaving dir as it was and no
// staging behind, once ctx is done (a build stopped by a signal) before
// the swap. A dir that is a symbolic link to a directory (a web root) is
// published into: the link stays, its target is replaced. Staging
// directories a killed build left beside dir are removed first (two
// builds into one --out at once are not supported).
func PublishContext(ctx context.Context, dir string, files render.Files) error {
	dir = filepath.Clean(dir)
	if target, err := filepath.EvalSymlinks(dir); err == nil {
		dir = target
	}
	if err := CheckOut(dir); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("--out %s left as it was: %w", dir, context.Cause(ctx))
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	left, _ := filepath.Glob(filepath.Join(parent, "."+filepath.Base(dir)+".new-*"))
	for _, l := range left {
		os.RemoveAll(l)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".new-")
	if err != nil {
		return fmt.Errorf("--out %s: cannot make a directory in %s: %v", dir, parent, pathErr(err))
	}
	// the marker lists what was written (its first line says why it is
	// there), so that the next build can tell a file added by hand
	all := render.Files{marker: []byte("# written by pglease-gen build; replaced by the next build\n" + strings.Join(files.Names(), "\n") + "\n")}
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
	if err := ctx.Err(); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("--out %s left as it was: %w", dir, context.Cause(ctx))
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

// mountPoint reports whether dir is a directory on another file system
// than its parent's (a tmpfs, a Docker volume, a bind mount of another
// device).
func mountPoint(dir string) bool {
	var a, b syscall.Stat_t
	if syscall.Stat(dir, &a) != nil || syscall.Stat(filepath.Dir(dir), &b) != nil {
		return false
	}
	return a.Dev != b.Dev
}
