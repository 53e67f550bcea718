package build

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
