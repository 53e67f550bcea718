package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// invocation is `pglease-gen SUBCOMMAND --flags...` on a line of a
// workflow (also as go run ./cmd/pglease-gen).
var invocation = regexp.MustCompile(`pglease-gen"?\s+([a-z]+)((?:\s+[^\s|;&>]+)*)`)

// TestWorkflowCommandsExist reads the CI pipeline and checks that every
// pglease-gen subcommand and flag it runs exists in this CLI, so that the
// pipeline and the tool cannot drift apart unnoticed.
func TestWorkflowCommandsExist(t *testing.T) {
	files, err := filepath.Glob("../../.github/workflows/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no workflows found (%v)", err)
	}
	seen := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			for _, m := range invocation.FindAllStringSubmatch(line, -1) {
				where := filepath.Base(f) + ":" + strings.TrimSpace(line)
				seen++
				if err := checkInvocation(m[1], strings.Fields(m[2])); err != "" {
					t.Errorf("%s line %d: %s\n  %s", filepath.Base(f), n+1, err, where)
				}
			}
		}
	}
	if seen < 8 {
		t.Errorf("found only %d pglease-gen invocations in the workflows; the pattern no longer matches them", seen)
	}
}

// checkInvocation says what is wrong with `pglease-gen sub args`, or "".
func checkInvocation(sub string, args []string) string {
	root := newRoot()
	cmd, _, err := root.Find([]string{sub})
	if err != nil || cmd == root {
		return "no subcommand " + sub
	}
	for _, a := range args {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		name = strings.TrimRight(name, `)"'`) // the end of $(...) or of a quoted command
		if cmd.Flags().Lookup(name) == nil {
			return "pglease-gen " + sub + " has no flag --" + name
		}
	}
	return ""
}

func TestCheckInvocationCatchesDrift(t *testing.T) {
	for _, c := range []struct {
		sub  string
		args []string
		want string
	}{
		{"build", []string{"--out", "dist", "--sign-key", "k.asc"}, ""},
		{"publish", nil, "no subcommand publish"},
		{"test", []string{"--pg", "17", "--platform", "arm64"}, "has no flag --platform"},
	} {
		if got := checkInvocation(c.sub, c.args); (got == "") != (c.want == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s %v: %q, want %q", c.sub, c.args, got, c.want)
		}
	}
}
