package artifact

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pglease/pglease-gen/internal/render"
)

// TestPublishThroughALink: --out a symbolic link to a directory (a web
// root) publishes into its target and leaves the link (before, the link
// was replaced by a directory and the web root stayed empty); a staging
// directory a killed build left beside the output is removed.
func TestPublishThroughALink(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "www", "pkgs")
	os.MkdirAll(root, 0o755)
	link := filepath.Join(dir, "dist")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "www", ".pkgs.new-12345")
	os.MkdirAll(filepath.Join(stale, "el9.x86_64"), 0o755)
	if err := Publish(link, render.Files{"SHA256SUMS": []byte("x\n")}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link %s is no longer a link (%v)", link, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "SHA256SUMS")); err != nil || string(b) != "x\n" {
		t.Errorf("the link's target holds %q, %v", b, err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("a killed build's staging directory is still there")
	}
	if err := Publish(link, render.Files{"SHA256SUMS": []byte("y\n")}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(link, "SHA256SUMS")); string(b) != "y\n" {
		t.Errorf("a second build through the link: %q", b)
	}
}

// TestPublishStoppedKeepsTheOld: a build whose context ends (a signal)
// before the swap leaves the old output and no staging.
func TestPublishStoppedKeepsTheOld(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "dist")
	if err := Publish(out, render.Files{"a": []byte("old")}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("stopped by interrupt"))
	err := PublishContext(ctx, out, render.Files{"a": []byte("new")})
	if err == nil || !strings.Contains(err.Error(), "left as it was: stopped by interrupt") {
		t.Errorf("err = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "a")); string(b) != "old" {
		t.Errorf("the output holds %q; want the old", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".dist.new-*")); len(left) > 0 {
		t.Errorf("staging left: %v", left)
	}
}

// TestMountPointRefused: a mount point cannot be swapped (rename gives
// EBUSY after the whole build): it is refused before building, with the
// directory inside it to give instead. /proc is one on every Linux.
func TestMountPointRefused(t *testing.T) {
	if !mountPoint("/proc") {
		t.Fatal("/proc is not seen as a mount point")
	}
	if mountPoint(t.TempDir()) {
		t.Error("a temporary directory is seen as a mount point")
	}
	// (refused before anything is tried there)
	if err := CheckOut("/proc"); err == nil || !strings.Contains(err.Error(), "is a mount point") || !strings.Contains(err.Error(), "--out /proc/dist") {
		t.Errorf("CheckOut(/proc): %v", err)
	}
}
