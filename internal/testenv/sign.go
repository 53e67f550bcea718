package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/sign"
)

// Signer is a signing key made for the test (RSA of bits, or Ed25519 with
// bits 0), created a day before the packages' release date and signing at
// that date; no key is ever committed.
func Signer(t testing.TB, bits int) *sign.Signer {
	t.Helper()
	_, s := signerIn(t, t.TempDir(), bits)
	return s
}

func signerIn(t testing.TB, dir string, bits int) (string, *sign.Signer) {
	t.Helper()
	when := model.Packages.Released()
	priv, _, err := sign.Generate("pg_lease test", "test@pglease.invalid", bits, nil, when.Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "key.asc")
	if err := os.WriteFile(file, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := sign.Load(file, nil, when)
	if err != nil {
		t.Fatal(err)
	}
	return file, s
}

// GnuPGSigner is Signer with the key imported into a GnuPG home of the
// test's own, which it returns (its agent is stopped and the home removed
// when the test ends): for tests of gpg, rpmsign and --sign-with.
func GnuPGSigner(t testing.TB, bits int) (home string, s *sign.Signer) {
	t.Helper()
	Tools(t, "gpg", "gpgconf")
	// (short: the agent's socket path has a length limit)
	home, err := os.MkdirTemp("", "pglease-gpg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run()
		os.RemoveAll(home)
	})
	file, s := signerIn(t, home, bits)
	if out, err := exec.Command("gpg", "--homedir", home, "--batch", "--import", file).CombinedOutput(); err != nil {
		t.Fatalf("gpg --import: %v\n%s", err, out)
	}
	return home, s
}
