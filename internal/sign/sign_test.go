package sign

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
)

var created = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// key writes a fresh test key (and its public half) and returns the path
// of the private one.
func key(t *testing.T, passphrase string) (priv, pub string) {
	t.Helper()
	b, p, err := Generate("pg_lease test", "test@pglease.invalid", 2048, []byte(passphrase), created)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	priv, pub = filepath.Join(dir, "key.asc"), filepath.Join(dir, "key.pub.asc")
	os.WriteFile(priv, b, 0o600)
	os.WriteFile(pub, p, 0o644)
	return priv, pub
}

func TestSignaturesVerifyAndRepeat(t *testing.T) {
	priv, _ := key(t, "s3cret")
	when := created.Add(24 * time.Hour)
	s, err := Load(priv, []byte("s3cret"), when)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(s.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("Origin: pg-lease\nSuite: bookworm\n")
	a, err := s.Armored(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openpgp.CheckArmoredDetachedSignature(ring, bytes.NewReader(data), bytes.NewReader(a), nil); err != nil {
		t.Errorf("the armored signature does not verify: %v", err)
	}
	if _, err := openpgp.CheckArmoredDetachedSignature(ring, bytes.NewReader(append(data, '!')), bytes.NewReader(a), nil); err == nil {
		t.Error("the signature verifies other data")
	}
	d, err := s.Detached(data)
	if err != nil {
		t.Fatal(err)
	}
	sig, _, err := openpgp.VerifyDetachedSignature(ring, bytes.NewReader(data), bytes.NewReader(d), nil)
	if err != nil {
		t.Fatalf("the binary signature does not verify: %v", err)
	}
	if sig.Hash.String() != "SHA-256" || !sig.CreationTime.Equal(when) || sig.Version != 4 {
		t.Errorf("signature: hash %s, made %s, v%d; want SHA-256, %s, v4", sig.Hash, sig.CreationTime, sig.Version, when)
	}
	again, _ := Load(priv, []byte("s3cret"), when)
	d2, _ := again.Detached(data)
	c1, _ := s.ClearSigned(data)
	c2, _ := again.ClearSigned(data)
	if !bytes.Equal(d, d2) || !bytes.Equal(c1, c2) {
		t.Error("the same key and data gave different signatures")
	}
	if !strings.HasPrefix(string(c1), "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n"+string(data)) {
		t.Errorf("cleartext signature:\n%s", c1)
	}
	// a build time before the key's creation signs at the creation instead
	early, _ := Load(priv, []byte("s3cret"), created.Add(-time.Hour))
	sig2, _ := early.Detached(data)
	got, _, err := openpgp.VerifyDetachedSignature(ring, bytes.NewReader(data), bytes.NewReader(sig2), nil)
	if err != nil || !got.CreationTime.Equal(created) {
		t.Errorf("early build time: %v, made %v; want the key's creation", err, got)
	}
}

func TestUnusableKeys(t *testing.T) {
	priv, pub := key(t, "s3cret")
	plain, _ := key(t, "")
	junk := filepath.Join(t.TempDir(), "junk.asc")
	os.WriteFile(junk, []byte("not a key\n"), 0o600)
	for _, c := range []struct {
		file, pass, want string
	}{
		{filepath.Join(t.TempDir(), "missing.asc"), "", "no such file"},
		{junk, "", "not an armored OpenPGP key"},
		{pub, "", "holds only a public key"},
		{priv, "", "protected by a passphrase; put it in the environment variable " + PassphraseEnv},
		{priv, "wrong", "does not unlock it"},
	} {
		if _, err := Load(c.file, []byte(c.pass), created); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s with %q: err = %v; want %q", filepath.Base(c.file), c.pass, err, c.want)
		}
	}
	if _, err := Load(plain, nil, created); err != nil {
		t.Errorf("a key without a passphrase: %v", err)
	}
}
