package rpm

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/sign"
	"github.com/pglease/pglease-gen/internal/testenv"
)

func signedBuild(t *testing.T, builder string, s *sign.Signer, majors ...int) render.Files {
	t.Helper()
	o := options(builder, model.Packages.Released(), majors...)
	o.Sign = s
	return build(t, o)
}

// TestSignatures checks the signatures in the signature header with Go's
// OpenPGP: the header one over the header, the other over header and
// payload; the rest of the package is what the unsigned build wrote.
func TestSignatures(t *testing.T) {
	s := testenv.Signer(t, 2048)
	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(s.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	signed, plain := signedBuild(t, PureGo, s, 17), build(t, options(PureGo, model.Packages.Released(), 17))
	again := signedBuild(t, PureGo, s, 17)
	for _, name := range []string{"el9.x86_64/pg_lease_17-" + ver + "-1PGSTY.el9.noarch.rpm", "SRPMS/pg_lease_17-" + ver + "-1PGSTY.el9.src.rpm"} {
		b := signed[name]
		sig, err := readHeader(b, 96)
		if err != nil {
			t.Fatal(err)
		}
		mainAt := 96 + sig.size + (8-sig.size%8)%8
		main, _ := readHeader(b, mainAt)
		byTag := map[int32][]byte{}
		for _, e := range sig.entries {
			byTag[e.tag] = e.data
		}
		for tag, covered := range map[int32][]byte{sigRSA: b[mainAt : mainAt+main.size], sigPGP: b[mainAt:]} {
			if _, err := openpgp.CheckDetachedSignature(ring, bytes.NewReader(covered), bytes.NewReader(byTag[tag]), nil); err != nil {
				t.Errorf("%s: signature tag %d: %v", name, tag, err)
			}
		}
		if !bytes.HasSuffix(b, plain[name][mainAt-len(b)+len(plain[name]):]) || !bytes.Equal(b[:96], plain[name][:96]) {
			t.Errorf("%s: signing changed more than the signature header", name)
		}
		if !bytes.Equal(b, again[name]) {
			t.Errorf("%s: two signed builds differ", name)
		}
		// signing again replaces the signatures rather than adding more
		twice, err := Sign(b, s)
		if err != nil || !bytes.Equal(twice, b) {
			t.Errorf("%s: signing a signed package changed it (%v)", name, err)
		}
	}
	if _, err := openpgp.CheckArmoredDetachedSignature(ring, bytes.NewReader(signed["el9.x86_64/repodata/repomd.xml"]),
		bytes.NewReader(signed["el9.x86_64/repodata/repomd.xml.asc"]), nil); err != nil {
		t.Errorf("repomd.xml.asc: %v", err)
	}
}

// TestRpmChecksTheSignatures imports the public key into a private rpm
// database and has rpm -K check the pure Go and the rpmbuild packages,
// signed with an RSA and with an Ed25519 key, then a package with one
// payload byte flipped.
func TestRpmChecksTheSignatures(t *testing.T) {
	testenv.Tools(t, "rpm", "rpmkeys", "rpmbuild")
	for _, kind := range []struct {
		name, algo string
		bits       int
	}{{"RSA", "RSA", 2048}, {"Ed25519", "EdDSA", 0}} {
		t.Run(kind.name, func(t *testing.T) {
			s := testenv.Signer(t, kind.bits)
			dir := t.TempDir()
			db, key := filepath.Join(dir, "db"), filepath.Join(dir, "RPM-GPG-KEY-pg_lease")
			os.WriteFile(key, s.PublicKey(), 0o644)
			if out, err := exec.Command("rpmkeys", "--dbpath", db, "--import", key).CombinedOutput(); err != nil {
				t.Fatalf("rpmkeys --import: %v\n%s", err, out)
			}
			check := func(name string, b []byte) (string, error) {
				f := filepath.Join(dir, filepath.Base(name))
				os.WriteFile(f, b, 0o644)
				out, err := exec.Command("rpmkeys", "--dbpath", db, "-Kv", f).CombinedOutput()
				return string(out), err
			}
			// rpm -Kv prints one line per signature: the header's, and the
			// header and payload's
			keyID := strings.ToLower(s.Fingerprint()[32:])
			header := regexp.MustCompile(`(?m)^\s*Header V4 ` + kind.algo + `/SHA256 Signature, key ID ` + keyID + `: OK$`)
			whole := regexp.MustCompile(`(?m)^\s*V4 ` + kind.algo + `/SHA256 Signature, key ID ` + keyID + `: OK$`)
			name := "el9.x86_64/pg_lease_16-" + ver + "-1PGSTY.el9.noarch.rpm"
			for _, builder := range []string{PureGo, Rpmbuild} {
				files := signedBuild(t, builder, s, 16)
				for _, n := range []string{name, "SRPMS/pg_lease_16-" + ver + "-1PGSTY.el9.src.rpm"} {
					out, err := check(n, files[n])
					if err != nil || !header.MatchString(out) || !whole.MatchString(out) || strings.Contains(out, "BAD") || strings.Contains(out, "NOKEY") {
						t.Errorf("%s (%s): rpm -K: %v\n%s", n, builder, err, out)
					}
				}
				b := bytes.Clone(files[name])
				b[len(b)-100] ^= 0xff // in the payload
				if out, err := check(name, b); err == nil || !strings.Contains(out, "BAD") {
					t.Errorf("%s (%s) with a flipped payload byte: rpm -K passed:\n%s", name, builder, out)
				}
			}
			// and without the key, rpm says the key is missing
			out, err := exec.Command("rpmkeys", "--dbpath", filepath.Join(dir, "empty"), "-Kv", filepath.Join(dir, filepath.Base(name))).CombinedOutput()
			if err == nil || !strings.Contains(string(out), "NOKEY") {
				t.Errorf("rpm -K without the key: %v\n%s", err, out)
			}
		})
	}
}

// TestLikeRpmsign signs the same package with rpm's own rpmsign (through
// gpg, with the same key) and with Sign: both verify, and ours carries
// every signature tag rpmsign writes (plus the header and payload one,
// which rpm 4.14 and later no longer add but older rpm checks).
func TestLikeRpmsign(t *testing.T) {
	testenv.Tools(t, "rpmsign", "gpg", "gpgconf", "rpmkeys")
	dir := t.TempDir()
	home, s := testenv.GnuPGSigner(t, 2048)
	name := "el9.x86_64/pg_lease_16-" + ver + "-1PGSTY.el9.noarch.rpm"
	unsigned := build(t, options(PureGo, model.Packages.Released(), 16))[name]
	theirs := filepath.Join(dir, "theirs.rpm")
	os.WriteFile(theirs, unsigned, 0o644)
	gpg, _ := exec.LookPath("gpg")
	cmd := exec.Command("rpmsign", "--addsign", "--define", "__gpg "+gpg, "--define", "_gpg_path "+home, "--define", "_gpg_name "+s.Fingerprint(), theirs)
	cmd.Env = append(os.Environ(), "GNUPGHOME="+home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rpmsign --addsign: %v\n%s", err, out)
	}
	ours, err := Sign(unsigned, s)
	if err != nil {
		t.Fatal(err)
	}
	tags := func(b []byte) map[int32]bool {
		h, err := readHeader(b, 96)
		if err != nil {
			t.Fatal(err)
		}
		m := map[int32]bool{}
		for _, e := range h.entries {
			m[e.tag] = true
		}
		return m
	}
	rb, _ := os.ReadFile(theirs)
	mine := tags(ours)
	t.Logf("signature tags: rpmsign %v, Sign %v; sizes: unsigned %d, rpmsign %d, Sign %d", slices.Sorted(maps.Keys(tags(rb))), slices.Sorted(maps.Keys(mine)), len(unsigned), len(rb), len(ours))
	for tag := range tags(rb) {
		if !mine[tag] && tag != 1008 { // 1008: the space rpmbuild reserves for signing in place
			t.Errorf("rpmsign writes signature tag %d, Sign does not", tag)
		}
	}
	if bytes.Equal(rb, unsigned) {
		t.Fatal("rpmsign did not sign")
	}
	db, pub := filepath.Join(dir, "db"), filepath.Join(dir, "pub.asc")
	os.WriteFile(pub, s.PublicKey(), 0o644)
	if out, err := exec.Command("rpmkeys", "--dbpath", db, "--import", pub).CombinedOutput(); err != nil {
		t.Fatalf("rpmkeys --import: %v\n%s", err, out)
	}
	ourFile := filepath.Join(dir, "ours.rpm")
	os.WriteFile(ourFile, ours, 0o644)
	// and through gpg (--sign-with gpg:FPR): the key on gpg's agent
	t.Setenv("GNUPGHOME", home)
	gs, err := sign.LoadGPG(s.Fingerprint(), nil, model.Packages.Released(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	viaGPG, err := Sign(unsigned, gs)
	if err != nil {
		t.Fatal(err)
	}
	gpgFile := filepath.Join(dir, "gpg.rpm")
	os.WriteFile(gpgFile, viaGPG, 0o644)
	for _, f := range []string{theirs, ourFile, gpgFile} {
		if out, err := exec.Command("rpmkeys", "--dbpath", db, "-K", f).CombinedOutput(); err != nil || !strings.Contains(string(out), "signatures OK") {
			t.Errorf("%s: rpm -K: %v\n%s", filepath.Base(f), err, out)
		}
	}
	// the header and payload after the signature header are the same bytes
	if !bytes.HasSuffix(rb, unsigned[len(unsigned)-1000:]) || !bytes.HasSuffix(ours, unsigned[len(unsigned)-1000:]) {
		t.Error("signing changed the payload")
	}
}
