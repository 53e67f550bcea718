package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeygenRefuses: a name or email that would read as more than a user
// ID is refused with exit 2, a message that names it and no file written.
func TestKeygenRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--name", "A\nB"}, `key name "A\nB": holds "\n"`},
		{[]string{"--name", "A (x) <y>"}, `holds "("`},
		{[]string{"--email", "a b@example.org"}, "not an address"},
		{[]string{"--email", "<a@example.org>"}, "not an address"},
		{[]string{"--email", "a@b@example.org"}, "not an address"},
		{[]string{"--email", "example.org"}, "not an address"},
	} {
		out := filepath.Join(dir, "k.asc")
		code, _, errs := run(t, append([]string{"keygen", "--out", out, "--bits", "2048"}, c.args...)...)
		if code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("keygen %q: exit %d, %q; want exit %d and %q", c.args, code, errs, ExitUsage, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("keygen %q wrote %s", c.args, out)
		}
	}
}
