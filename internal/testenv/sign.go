package testenv

import (
	"os"
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
	when := model.Packages.Released()
	priv, _, err := sign.Generate("pg_lease test", "test@pglease.invalid", bits, nil, when.Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "key.asc")
	if err := os.WriteFile(file, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := sign.Load(file, nil, when)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
