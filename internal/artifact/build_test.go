package artifact

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
)

func TestPublishRefusesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "notes.txt")
	os.WriteFile(mine, []byte("mine"), 0o644)
	err := Publish(dir, render.Files{"a": []byte("b")})
	if err == nil || !strings.Contains(err.Error(), "was not written by pglease-gen build") {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(mine); string(b) != "mine" {
		t.Error("Publish touched a directory it refused")
	}
	out := filepath.Join(dir, "dist")
	if err := Publish(out, render.Files{"x": []byte("1")}); err != nil {
		t.Fatal(err)
	}
	if err := Publish(out, render.Files{"y": []byte("2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "x")); err == nil {
		t.Error("a second Publish kept a file of the first")
	}
	if b, _ := os.ReadFile(filepath.Join(out, "y")); string(b) != "2" {
		t.Error("second Publish did not write y")
	}
}

// A file added by hand to a build directory is not removed without a
// word: the next build refuses, naming it, and changes nothing; a parent
// that cannot be written is refused before any work, naming --out.
func TestPublishKeepsFilesAddedByHand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "dist")
	if err := Publish(out, render.Files{"x": []byte("1"), "sub/y": []byte("2")}); err != nil {
		t.Fatal(err)
	}
	if err := CheckOut(out); err != nil {
		t.Fatalf("a build directory as the build left it: %v", err)
	}
	added := filepath.Join(out, "sub", "notes.txt")
	os.WriteFile(added, []byte("mine"), 0o644)
	err := Publish(out, render.Files{"z": []byte("3")})
	if err == nil || !strings.Contains(err.Error(), "sub/notes.txt") || !strings.Contains(err.Error(), "--out") {
		t.Fatalf("err = %v; want a refusal naming the added file and --out", err)
	}
	if b, _ := os.ReadFile(added); string(b) != "mine" {
		t.Error("the added file is gone")
	}
	if _, err := os.Stat(filepath.Join(out, "x")); err != nil {
		t.Error("the refused build changed the directory")
	}
	if os.Geteuid() != 0 {
		ro := t.TempDir()
		os.Chmod(ro, 0o555)
		if err := CheckOut(filepath.Join(ro, "dist")); err == nil || !strings.Contains(err.Error(), "--out") {
			t.Errorf("an unwritable parent: %v", err)
		}
	}
}

func TestBuildableRefusesNothing(t *testing.T) {
	el8, _ := model.DistroNamed("el8")
	if _, err := Buildable([]model.Distro{el8}, []int{19}); err == nil || !strings.Contains(err.Error(), "el8 gets 14-18") {
		t.Errorf("el8 with 19: %v", err)
	}
	el9, _ := model.DistroNamed("el9")
	ds, err := Buildable([]model.Distro{el8, el9}, []int{19})
	if err != nil || len(ds) != 1 || ds[0].Name != "el9" {
		t.Errorf("el8 and el9 with 19: %v, %v; want el9 alone", ds, err)
	}
}
