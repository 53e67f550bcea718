package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
)

// TestKeygenRefusesAndExpires: a name or email that would read as more
// than a user ID, or a bad --expire, is refused with exit 2, a message
// that names it and no file written; the key made expires after --expire
// (two years unless given).
func TestKeygenRefusesAndExpires(t *testing.T) {
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
		{[]string{"--expire", "2w"}, `--expire "2w": give Ny`},
		{[]string{"--expire", "0y"}, `--expire "0y"`},
		{[]string{"--expire", ""}, "--expire is empty"},
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
	for _, c := range []struct {
		expire string
		life   time.Duration
	}{{"", 2 * 365 * 24 * time.Hour}, {"30d", 30 * 24 * time.Hour}, {"never", 0}} {
		out := filepath.Join(dir, "key"+c.expire+".asc")
		args := []string{"keygen", "--out", out, "--bits", "2048"}
		if c.expire != "" {
			args = append(args, "--expire", c.expire)
		}
		if code, _, errs := run(t, args...); code != ExitOK {
			t.Fatalf("keygen %q: exit %d\n%s", args, code, errs)
		}
		f, err := os.Open(out + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		ents, err := openpgp.ReadArmoredKeyRing(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := ents[0].PrimarySelfSignature()
		if sig == nil {
			t.Fatal("the key has no self-signature")
		}
		got := time.Duration(0)
		if sig.KeyLifetimeSecs != nil {
			got = time.Duration(*sig.KeyLifetimeSecs) * time.Second
		}
		if got != c.life {
			t.Errorf("--expire %q: the key's lifetime is %v; want %v", c.expire, got, c.life)
		}
	}
}
