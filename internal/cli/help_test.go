package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// machineDefaults are the defaults that depend on the machine the help
// is printed on (its CPUs and architecture), written as placeholders.
var machineDefaults = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`(--jobs int +majors to run at once) \(default \d+\)`), "$1 (default NCPU)"},
	{regexp.MustCompile(`\(default "` + runtime.GOARCH + `"\)`), `(default "GOARCH")`},
}

// TestHelpGolden keeps pglease-gen --help and every command's --help as
// testdata/help shows them, so that they change only on purpose (go test
// ./internal/cli -run TestHelpGolden -update, then review the diff).
func TestHelpGolden(t *testing.T) {
	t.Setenv("PGLEASE_IMAGE", "")
	cmds := []string{""}
	for _, c := range newRoot().Commands() {
		if c.Name() != "help" && c.Name() != "completion" {
			cmds = append(cmds, c.Name())
		}
	}
	for _, name := range cmds {
		args := []string{"--help"}
		file := "pglease-gen.txt"
		if name != "" {
			args = []string{name, "--help"}
			file = "pglease-gen-" + name + ".txt"
		}
		code, out, errs := run(t, args...)
		if code != ExitOK || errs != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errs)
		}
		for _, d := range machineDefaults {
			out = d.re.ReplaceAllString(out, d.with)
		}
		path := filepath.Join("testdata", "help", file)
		if *testenv.Update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./internal/cli -run TestHelpGolden -update writes it)", err)
		}
		if string(want) != out {
			t.Errorf("pglease-gen %s --help differs from %s (go test ./internal/cli -run TestHelpGolden -update, then review the diff):\n%s",
				name, path, out)
		}
	}
}

// TestHelpTextsAreRight: what the issue of the help texts found wrong
// stays right: placeholders, one default each, the majors from the model.
func TestHelpTextsAreRight(t *testing.T) {
	_, out, _ := run(t, "test", "--help")
	for _, want := range []string{"--deb DIR", "--rpm DIR", "--image REPO"} {
		if !strings.Contains(out, want) {
			t.Errorf("test --help lacks %q", want)
		}
	}
	if _, root, _ := run(t, "--help"); !strings.Contains(root, "suites on PostgreSQL "+model.PgLease.MajorRange()+" in Docker") {
		t.Errorf("pglease-gen --help does not name the model's majors for test:\n%s", root)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Count(l, "default") > 1 {
			t.Errorf("a default is printed twice: %s", l)
		}
	}
	_, out, _ = run(t, "build", "--help")
	if !strings.Contains(out, "a deb with the\ncodename in its version, in the one apt repository") || !strings.Contains(out, model.DistroNames()) {
		t.Errorf("build --help does not say it builds debs:\n%s", out)
	}
}
