package sign

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gnupg is a GnuPG home of the test's own, in which keys are made as a
// release team makes them.
type gnupg struct {
	t    *testing.T
	home string
}

func newGnupg(t *testing.T) *gnupg {
	t.Helper()
	// (short: the agent's socket path has a length limit)
	home, err := os.MkdirTemp("", "pglease-gpg-")
	if err != nil {
		t.Fatal(err)
	}
	g := &gnupg{t: t, home: home}
	t.Cleanup(func() {
		c := exec.Command("gpgconf", "--kill", "gpg-agent")
		c.Env = append(os.Environ(), "GNUPGHOME="+home)
		c.Run()
		os.RemoveAll(home)
	})
	return g
}

// run runs gpg in the test's home, at the faked time at ("" for now), with
// stdin, and returns its output.
func (g *gnupg) run(at, stdin string, args ...string) string {
	g.t.Helper()
	all := []string{"--batch", "--no-tty", "--pinentry-mode", "loopback", "--passphrase", ""}
	if at != "" {
		all = append(all, "--faked-system-time", at+"!")
	}
	c := exec.Command("gpg", append(all, args...)...)
	c.Env = append(os.Environ(), "GNUPGHOME="+g.home)
	c.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		g.t.Fatalf("gpg %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// subkeys are the key's subkeys as --with-colons lists them: validity,
// key id, creation (Unix seconds).
func (g *gnupg) subkeys(fpr string) [][3]string {
	var out [][3]string
	for _, l := range strings.Split(g.run("", "", "--list-keys", "--with-colons", fpr), "\n") {
		if f := strings.Split(l, ":"); f[0] == "sub" {
			out = append(out, [3]string{f[1], f[4], f[5]})
		}
	}
	return out
}

func (g *gnupg) export(fpr, name string, args ...string) string {
	g.t.Helper()
	f := filepath.Join(g.home, name)
	if err := os.WriteFile(f, []byte(g.run("", "", append(args, fpr)...)), 0o600); err != nil {
		g.t.Fatal(err)
	}
	return f
}

// TestReleaseTeamSubkeys signs with a key kept as Debian's and PGDG's
// are: a primary made in 2025 that only certifies, a signing subkey that
// expired, one that was revoked, and one added today. The build is dated
// three days back (its SOURCE_DATE_EPOCH): the newest subkey signs, at its
// own making, and gpgv and sqv accept the InRelease and Release.gpg; the
// same from the export that keeps the primary offline (gpg
// --export-secret-subkeys). Signing at the build's date, as before, is the
// broken variant: gpgv refuses a signature older than its key. Without
// the new subkey the key is refused with the command that adds one.
func TestReleaseTeamSubkeys(t *testing.T) {
	if testing.Short() {
		t.Skip("needs gpg, gpgv, sqv: skipped under -short (make test runs it)")
	}
	for _, tool := range []string{"gpg", "gpgconf", "gpgv", "sqv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("needs %s (make deps installs it): %v", tool, err)
		}
	}
	g := newGnupg(t)
	g.run("20250301T000000", "", "--quick-gen-key", "pg_lease release <release@pglease.invalid>", "ed25519", "cert", "never")
	fpr := ""
	for _, l := range strings.Split(g.run("", "", "--list-keys", "--with-colons"), "\n") {
		if strings.HasPrefix(l, "fpr:") {
			fpr = strings.Split(l, ":")[9]
			break
		}
	}
	g.run("20250301T000100", "", "--quick-add-key", fpr, "ed25519", "sign", "2026-06-01")
	g.run("20250601T000000", "", "--quick-add-key", fpr, "ed25519", "sign", "never")
	g.run("", "key 2\nrevkey\ny\n0\n\ny\nsave\n", "--command-fd", "0", "--edit-key", fpr)
	stale := g.export(fpr, "stale.asc", "--export-secret-keys", "--armor")
	now := time.Now()
	if _, err := LoadAt(stale, nil, now.Add(-72*time.Hour), now); err == nil || !strings.Contains(err.Error(), "gpg --quick-add-key "+fpr+" ed25519 sign 2y") {
		t.Errorf("a key whose signing subkeys expired or were revoked: err = %v; want the command that adds one", err)
	} else {
		t.Logf("without a valid subkey: %v", err)
	}
	g.run("", "", "--quick-add-key", fpr, "ed25519", "sign", "2y")
	subs := g.subkeys(fpr)
	if len(subs) != 3 || subs[0][0] != "e" || subs[1][0] != "r" || subs[2][0] != "u" {
		t.Fatalf("subkeys (validity, id, made): %v; want expired, revoked, valid", subs)
	}
	newest := subs[2][1]
	var made int64
	fmt.Sscan(subs[2][2], &made)
	g.export(fpr, "pub.gpg", "--export")
	keyring := filepath.Join(g.home, "pub.gpg")
	pubAsc := g.export(fpr, "pub.asc", "--export", "--armor")
	data := []byte("Origin: pg-lease\nLabel: pg_lease\nSuite: bookworm\nCodename: bookworm\n")
	release := filepath.Join(g.home, "Release")
	os.WriteFile(release, data, 0o644)
	gpgv := func(args ...string) (int, string) {
		out, err := exec.Command("gpgv", append([]string{"--keyring", keyring}, args...)...).CombinedOutput()
		if e, ok := err.(*exec.ExitError); ok {
			return e.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	when := now.Add(-72 * time.Hour)
	for _, export := range []string{"--export-secret-keys", "--export-secret-subkeys"} {
		file := g.export(fpr, "key"+export+".asc", export, "--armor")
		s, err := LoadAt(file, nil, when, now)
		if err != nil {
			t.Errorf("%s: %v", export, err)
			continue
		}
		if id := fmt.Sprintf("%016X", s.key.KeyId); id != newest {
			t.Errorf("%s: signs with %s; want the newest valid subkey %s", export, id, newest)
		}
		if s.when.Unix() != made {
			t.Errorf("%s: signs at %s; want the subkey's making, %s", export, s.when.UTC(), time.Unix(made, 0).UTC())
		}
		clear, _ := s.ClearSigned(data)
		detached, _ := s.Armored(data)
		inRelease := filepath.Join(g.home, "InRelease")
		os.WriteFile(inRelease, clear, 0o644)
		sig := filepath.Join(g.home, "Release.gpg")
		os.WriteFile(sig, detached, 0o644)
		if code, out := gpgv(inRelease); code != 0 || !strings.Contains(out, newest) {
			t.Errorf("%s: gpgv InRelease: exit %d\n%s", export, code, out)
		}
		if code, out := gpgv(sig, release); code != 0 {
			t.Errorf("%s: gpgv Release.gpg: exit %d\n%s", export, code, out)
		}
		if out, err := exec.Command("sqv", "--keyring", pubAsc, sig, release).CombinedOutput(); err != nil {
			t.Errorf("%s: sqv Release.gpg: %v\n%s", export, err, out)
		}
		again, _ := LoadAt(file, nil, when, now)
		if c2, _ := again.ClearSigned(data); !bytes.Equal(clear, c2) {
			t.Errorf("%s: the same key and data gave different signatures", export)
		}
	}
	// the same key through gpg (--sign-with gpg:FPR), as a key on an agent
	// or a card signs: the newest subkey, at its making, what gpgv accepts
	t.Setenv("GNUPGHOME", g.home)
	if s, err := LoadGPG(fpr, nil, when, now); err != nil {
		t.Errorf("gpg:%s: %v", fpr, err)
	} else {
		if id := fmt.Sprintf("%016X", s.pub.KeyId); id != newest || s.when.Unix() != made {
			t.Errorf("gpg: signs with %s at %s; want the newest valid subkey %s at its making", id, s.when.UTC(), newest)
		}
		clear, err := s.ClearSigned(data)
		if err != nil {
			t.Fatal(err)
		}
		inRelease := filepath.Join(g.home, "InRelease.gpg-made")
		os.WriteFile(inRelease, clear, 0o644)
		if code, out := gpgv(inRelease); code != 0 || !strings.Contains(out, newest) {
			t.Errorf("gpg: gpgv InRelease: exit %d\n%s", code, out)
		}
		if again, _ := s.ClearSigned(data); !bytes.Equal(clear, again) {
			t.Errorf("gpg: the same key and data gave different signatures")
		}
	}
	for id, want := range map[string]string{"nobody@pglease.invalid": "gpg has no public key", "-x": "name a key as gpg does"} {
		if _, err := LoadGPG(id, nil, when, now); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("gpg:%s: %v; want %q", id, err, want)
		}
	}
	// the broken variant: dated at the build's time, before the subkey
	file := filepath.Join(g.home, "key--export-secret-keys.asc")
	s, err := LoadAt(file, nil, when, now)
	if err != nil {
		t.Fatal(err)
	}
	s.when = when
	clear, _ := s.ClearSigned(data)
	inRelease := filepath.Join(g.home, "InRelease.early")
	os.WriteFile(inRelease, clear, 0o644)
	if code, out := gpgv(inRelease); code == 0 {
		t.Errorf("a signature dated before its subkey passed gpgv: the test cannot see the fault\n%s", out)
	} else {
		t.Logf("dated at the build's time (the broken variant): gpgv exit %d: %s", code, strings.TrimSpace(out))
	}
}
