package sign

import (
	"bytes"
	"crypto"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
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

// TestGnuPGAndSequoiaVerify checks the signatures with the verifiers apt
// and repository tools run: GnuPG's gpgv (bookworm's 2.2) must accept the
// cleartext-signed InRelease and the detached Release.gpg with exit
// status 0, and Sequoia's sqv (bookworm's 1.1 checks detached signatures
// only) the detached one. go-crypto's own cleartext output, without the
// armor checksum, is the broken variant: when the signature's length is a
// multiple of three (its radix-64 has no '=' padding to end it), gpgv
// reads the END line as data, reports the good signature and exits 2.
func TestGnuPGAndSequoiaVerify(t *testing.T) {
	// testenv.Tools, which this package cannot import (testenv imports it)
	if testing.Short() {
		t.Skip("needs gpgv, sqv: skipped under -short (make test runs it)")
	}
	for _, tool := range []string{"gpgv", "sqv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("needs %s (make deps installs it): %v", tool, err)
		}
	}
	// a key of the size keygen makes, whose signatures are 3 * n bytes long
	b, _, err := Generate("pg_lease test", "test@pglease.invalid", 3072, nil, created)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	priv := write("key.asc", b)
	var data bytes.Buffer
	data.WriteString("Origin: pg-lease\nLabel: pg_lease\nSuite: bookworm\nCodename: bookworm\nArchitectures: amd64 arm64\nComponents: main\nSHA256:\n")
	for i := range 12 {
		fmt.Fprintf(&data, " %064x %6d main/binary-amd64/Packages%d\n", i, 100*i, i)
	}
	release := write("Release", data.Bytes())
	run := func(name string, args ...string) (int, string) {
		out, err := exec.Command(name, args...).CombinedOutput()
		if e, ok := err.(*exec.ExitError); ok {
			return e.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	shown := false
	for i := range 4 {
		s, err := Load(priv, nil, created.Add(time.Duration(i+1)*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		block, err := armor.Decode(bytes.NewReader(s.PublicKey()))
		if err != nil {
			t.Fatal(err)
		}
		bin, _ := io.ReadAll(block.Body)
		keyring := write("key.gpg", bin)
		keyAsc := write("key.pub.asc", s.PublicKey())
		clear, _ := s.ClearSigned(data.Bytes())
		detached, _ := s.Armored(data.Bytes())
		tampered := bytes.Replace(clear, []byte("Suite: bookworm"), []byte("Suite: bookwarm"), 1)
		cases := []struct {
			what string
			code int
			tool string
			args []string
		}{
			{"InRelease", 0, "gpgv", []string{"--keyring", keyring, write("InRelease", clear)}},
			{"Release.gpg", 0, "gpgv", []string{"--keyring", keyring, write("Release.gpg", detached), release}},
			{"Release.gpg", 0, "sqv", []string{"--keyring", keyAsc, filepath.Join(dir, "Release.gpg"), release}},
			{"a tampered InRelease", 1, "gpgv", []string{"--keyring", keyring, write("InRelease.bad", tampered)}},
		}
		// the length that matters is that of the cleartext signature's own
		// block: a text-mode signature, whose RSA value can be a byte
		// shorter than the detached one's (a leading zero, once in 256)
		raw, _ := s.clearSignedNoChecksum(data.Bytes())
		_, rawSig, err := clearSignature(raw)
		if err != nil {
			t.Fatal(err)
		}
		if len(rawSig)%3 == 0 {
			shown = true
			cases = append(cases, struct {
				what string
				code int
				tool string
				args []string
			}{"go-crypto's InRelease (no armor checksum)", 2, "gpgv", []string{"--keyring", keyring, write("InRelease.raw", raw)}})
		}
		for _, c := range cases {
			code, out := run(c.tool, c.args...)
			if code != c.code {
				t.Errorf("signature %d: %s %s: exit %d, want %d\n%s", i, c.tool, c.what, code, c.code, out)
			}
			if c.code == 0 && strings.Contains(out, "invalid radix64") {
				t.Errorf("signature %d: %s %s: %s", i, c.tool, c.what, out)
			}
		}
	}
	if !shown {
		t.Error("no signature of 3 * n bytes among 4: the broken variant did not run")
	}
}

// timedKey writes a key made at made that expires after life (0: never),
// revoked when revoke is set, and returns its file.
func timedKey(t *testing.T, made time.Time, life time.Duration, revoke bool) string {
	t.Helper()
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA, Curve: packet.Curve25519, DefaultHash: crypto.SHA256,
		Time: func() time.Time { return made }, KeyLifetimeSecs: uint32(life.Seconds())}
	e, err := openpgp.NewEntity("pg_lease test", "", "test@pglease.invalid", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if revoke {
		if err := e.RevokeKey(packet.KeyCompromised, "lost laptop", cfg); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	w, _ := armor.Encode(&b, openpgp.PrivateKeyType, nil)
	if err := e.SerializePrivateWithoutSigning(w, cfg); err != nil {
		t.Fatal(err)
	}
	w.Close()
	file := filepath.Join(t.TempDir(), "key.asc")
	if err := os.WriteFile(file, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestKeysCheckedAgainstNow: a key is judged at the clock's now, not at the
// build's back-dated signature time. Under the old check (validity at
// when only), the first case, a key that expired one second before the
// build but was valid at SOURCE_DATE_EPOCH, signed, and gpgv reported
// EXPKEYSIG on every host.
func TestKeysCheckedAgainstNow(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	when := now.Add(-72 * time.Hour) // a build dated three days back
	for _, c := range []struct {
		name string
		file string
		want string // "" for accepted
	}{
		{"expired a second ago", timedKey(t, now.Add(-100*24*time.Hour), 100*24*time.Hour-time.Second, false), "expired on 2026-12-04 11:59:59 UTC, before now"},
		{"expires in ten days", timedKey(t, now.Add(-100*24*time.Hour), 110*24*time.Hour, false), "expires on 2026-12-14 12:00:00 UTC, within 30 days of now"},
		{"revoked", timedKey(t, now.Add(-100*24*time.Hour), 0, true), "revoked on"},
		{"made tomorrow", timedKey(t, now.Add(24*time.Hour), 0, false), "after now"},
		{"good for a year", timedKey(t, now.Add(-100*24*time.Hour), 465*24*time.Hour, false), ""},
		{"never expires", timedKey(t, now.Add(-100*24*time.Hour), 0, false), ""},
	} {
		_, err := LoadAt(c.file, nil, when, now)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err = %v; want %q", c.name, err, c.want)
		case err != nil:
			t.Logf("%s: %v", c.name, err)
		}
	}
}
