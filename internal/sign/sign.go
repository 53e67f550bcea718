// Package sign makes the OpenPGP signatures of the packages and the
// repositories: binary detached signatures for RPM signature headers,
// armored detached ones for repomd.xml and apt's Release.gpg, and the
// cleartext-signed InRelease. Signatures are v4 with SHA-256 (EL9 refuses
// SHA-1) and deterministic: no random salt, and a creation time fixed by
// the build (SOURCE_DATE_EPOCH, or the signing key's or subkey's creation
// if that is later), so that the same key and input give the same bytes.
package sign

import (
	"bytes"
	"crypto"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// PassphraseEnv names the environment variable that holds the signing
// key's passphrase; it is never a flag, so that it stays out of process
// listings and shell history.
const PassphraseEnv = "PGLEASE_SIGN_PASSPHRASE"

// Signer signs with one private key.
type Signer struct {
	entity *openpgp.Entity
	key    *packet.PrivateKey // the key that signs: the primary or a signing subkey
	when   time.Time
	// gpg, when set, signs through the user's GnuPG (its agent, a
	// smartcard) with the key key's public part names; entity is then the
	// public key gpg exported
	gpg *gpgKey
	pub *packet.PublicKey // the signing key's public part
	// notBefore is the signing key's making (or its binding's): no
	// signature is dated before it
	notBefore time.Time
}

// At is s signing at t instead (not before the signing key's making):
// the repositories' metadata is signed when the build runs, the packages
// at SOURCE_DATE_EPOCH.
func (s *Signer) At(t time.Time) *Signer {
	c := *s
	c.when = t
	if t.Before(s.notBefore) {
		c.when = s.notBefore
	}
	return &c
}

// MinValidity is how long a signing key must stay valid after the build:
// the repositories carry no Valid-Until, so they are good for as long as
// their key is, and a host refuses them once it has expired (apt reports
// EXPKEYSIG and treats the suite as unsigned; dnf fails the key check).
const MinValidity = 30 * 24 * time.Hour

// Load reads an armored private key and decrypts it with passphrase when
// it is protected, for signatures dated when. The key is checked against
// the clock too (LoadAt with time.Now()): every way it can be unusable is
// a plain error.
func Load(file string, passphrase []byte, when time.Time) (*Signer, error) {
	return LoadAt(file, passphrase, when, time.Now())
}

// LoadAt is Load with the clock read as now: a key revoked, expired,
// expiring within MinValidity or not yet valid at now is refused, whatever
// when (a build's back-dated SOURCE_DATE_EPOCH) says, since hosts check
// the signatures at their own now.
func LoadAt(file string, passphrase []byte, when, now time.Time) (*Signer, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	defer f.Close()
	ents, err := openpgp.ReadArmoredKeyRing(f)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: not an armored OpenPGP key (%v); make one with: pglease-gen keygen --out FILE", file, err)
	}
	if len(ents) != 1 {
		return nil, fmt.Errorf("signing key %s: holds %d keys; give it exactly one", file, len(ents))
	}
	e := ents[0]
	if e.PrivateKey == nil {
		return nil, fmt.Errorf("signing key %s: holds only a public key; pass the private key (gpg --export-secret-keys --armor)", file)
	}
	if e.PrivateKey.Encrypted {
		if len(passphrase) == 0 {
			return nil, fmt.Errorf("signing key %s: is protected by a passphrase; put it in the environment variable %s", file, PassphraseEnv)
		}
		if err := e.DecryptPrivateKeys(passphrase); err != nil {
			return nil, fmt.Errorf("signing key %s: the passphrase in %s does not unlock it (%v)", file, PassphraseEnv, err)
		}
	}
	k, err := validNow(file, e, now)
	if err != nil {
		return nil, err
	}
	// The key that signs is the one valid now (the newest signing subkey
	// that has not expired and is not revoked, else a primary that may
	// sign), and a signature is never older than it: gpgv and rpm refuse
	// a signature made before its key or its binding. A release team's
	// subkey added today thus signs a build dated back to its
	// SOURCE_DATE_EPOCH at the subkey's own making, the same bytes each
	// time.
	notBefore := keyMade(e, k)
	if when.Before(notBefore) {
		when = notBefore
	}
	if k.PrivateKey == nil || k.PrivateKey.Dummy() {
		return nil, fmt.Errorf("signing key %s: holds no private part of its signing key %X (exported without it, or kept on a card); export it with gpg --export-secret-subkeys --armor %X!", file, k.PublicKey.Fingerprint, k.PublicKey.Fingerprint)
	}
	if k.PrivateKey.Encrypted {
		return nil, fmt.Errorf("signing key %s: its signing subkey is still encrypted", file)
	}
	return &Signer{entity: e, key: k.PrivateKey, pub: k.PublicKey, when: when, notBefore: notBefore}, nil
}

// keyMade is when the signing key k of e became usable: the latest of the
// primary's making, the key's and its binding signature's.
func keyMade(e *openpgp.Entity, k openpgp.Key) time.Time {
	t := e.PrimaryKey.CreationTime
	for _, u := range []time.Time{k.PublicKey.CreationTime, k.SelfSignature.CreationTime} {
		if u.After(t) {
			t = u
		}
	}
	return t
}

func (s *Signer) config() *packet.Config {
	no := false
	return &packet.Config{
		DefaultHash:                           crypto.SHA256,
		Time:                                  func() time.Time { return s.when },
		SigningKeyId:                          s.key.KeyId,
		NonDeterministicSignaturesViaNotation: &no,
	}
}

// RSA reports whether the signing key is RSA, which decides the RPM
// signature tags (RSA/PGP or DSA/GPG, the latter for every other algorithm).
func (s *Signer) RSA() bool {
	switch s.pub.PubKeyAlgo {
	case packet.PubKeyAlgoRSA, packet.PubKeyAlgoRSASignOnly:
		return true
	}
	return false
}

// Detached is a binary detached signature of data, as RPM stores it.
func (s *Signer) Detached(data []byte) ([]byte, error) {
	if s.gpg != nil {
		return s.gpg.sign(s.when, data, "--detach-sign")
	}
	var buf bytes.Buffer
	if err := openpgp.DetachSign(&buf, s.entity, bytes.NewReader(data), s.config()); err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return buf.Bytes(), nil
}

// Armored is an armored detached signature of data (repomd.xml.asc,
// Release.gpg).
func (s *Signer) Armored(data []byte) ([]byte, error) {
	if s.gpg != nil {
		return s.gpg.sign(s.when, data, "--armor", "--detach-sign")
	}
	var buf bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&buf, s.entity, bytes.NewReader(data), s.config()); err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// ClearSigned is data with a cleartext signature (apt's InRelease).
//
// go-crypto ends the signature's armor without the CRC-24 checksum line
// (RFC 9580 leaves it out); GnuPG 2.2's gpgv, bookworm's, then reads the
// END line as radix-64 data, and although it reports the good signature it
// exits 2, which tools that trust its exit status refuse. So the signature
// block is armored again, with its checksum, as the detached ones are.
func (s *Signer) ClearSigned(data []byte) ([]byte, error) {
	if s.gpg != nil {
		return s.gpg.sign(s.when, data, "--clearsign")
	}
	text, err := s.clearSignedNoChecksum(data)
	if err != nil {
		return nil, err
	}
	at, sig, err := clearSignature(text)
	if err != nil {
		return nil, err
	}
	out := bytes.NewBuffer(append([]byte(nil), text[:at]...))
	if err := armored(out, "PGP SIGNATURE", func(w io.Writer) error { _, err := w.Write(sig); return err }); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// clearSignature finds the signature block of a cleartext-signed text:
// where it begins, and the signature packet it armors.
func clearSignature(text []byte) (int, []byte, error) {
	at := bytes.LastIndex(text, []byte("-----BEGIN PGP SIGNATURE-----"))
	if at < 0 {
		return 0, nil, fmt.Errorf("sign: no signature block in the cleartext signature")
	}
	block, err := armor.Decode(bytes.NewReader(text[at:]))
	if err != nil {
		return 0, nil, fmt.Errorf("sign: reading the cleartext signature's block: %w", err)
	}
	sig, err := io.ReadAll(block.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("sign: reading the cleartext signature's block: %w", err)
	}
	return at, sig, nil
}

// clearSignedNoChecksum is go-crypto's cleartext signature as it writes it.
func (s *Signer) clearSignedNoChecksum(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	w, err := clearsign.Encode(&buf, s.key, s.config())
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// PublicKey is the armored public key, for rpm --import, dnf's gpgkey=
// and apt's Signed-By.
func (s *Signer) PublicKey() []byte {
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err == nil {
		err = s.entity.Serialize(w)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		panic(err) // writes to memory of a key that was just read
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// Fingerprint is the primary key's fingerprint in upper-case hex.
func (s *Signer) Fingerprint() string {
	return strings.ToUpper(fmt.Sprintf("%x", s.entity.PrimaryKey.Fingerprint))
}

// Identity is the key's primary user id.
func (s *Signer) Identity() string {
	if id := s.entity.PrimaryIdentity(); id != nil {
		return id.Name
	}
	return ""
}

// Generate makes a key for testing and for first use: RSA of bits (or,
// with bits 0, Ed25519), SHA-256 self-signatures, created at when, without
// an expiry (go-crypto marks the key expiration subpacket critical, and
// rpm's parser then refuses the key: "key 1 import failed"); the private
// key is armored and, given a passphrase, protected by it.
func Generate(name, email string, bits int, passphrase []byte, when time.Time) (private, public []byte, err error) {
	if name == "" || email == "" {
		return nil, nil, errors.New("a key needs a name and an email")
	}
	// a user ID is "name <email>": anything that would read as more than
	// that is refused (go-crypto's own message names none of it)
	if i := strings.IndexFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f || strings.ContainsRune("()<>", r) }); i >= 0 {
		return nil, nil, fmt.Errorf("key name %q: holds %q; a user ID's name is plain text, without control characters, parentheses or angle brackets", name, name[i:i+1])
	}
	if strings.TrimSpace(name) != name {
		return nil, nil, fmt.Errorf("key name %q: starts or ends with a space", name)
	}
	local, domain, ok := strings.Cut(email, "@")
	if !ok || local == "" || domain == "" || strings.ContainsFunc(email, func(r rune) bool { return r <= ' ' || r == 0x7f || strings.ContainsRune("()<>,;:\\\"[]", r) }) || strings.Count(email, "@") != 1 {
		return nil, nil, fmt.Errorf("key email %q: not an address (local@domain, no spaces, brackets or control characters)", email)
	}
	cfg := &packet.Config{
		Algorithm: packet.PubKeyAlgoRSA, RSABits: bits, DefaultHash: crypto.SHA256,
		Time: func() time.Time { return when },
	}
	if bits == 0 {
		cfg.Algorithm, cfg.Curve = packet.PubKeyAlgoEdDSA, packet.Curve25519
	}
	e, err := openpgp.NewEntity(name, "", email, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("generate a key: %w", err)
	}
	var pub bytes.Buffer
	if err := armored(&pub, openpgp.PublicKeyType, e.Serialize); err != nil {
		return nil, nil, err
	}
	// the self-signatures are made by SerializePrivate; the public copy
	// above already carries them (NewEntity signed the identity)
	if len(passphrase) > 0 {
		if err := e.EncryptPrivateKeys(passphrase, cfg); err != nil {
			return nil, nil, err
		}
	}
	var priv bytes.Buffer
	if err := armored(&priv, openpgp.PrivateKeyType, func(w io.Writer) error { return e.SerializePrivateWithoutSigning(w, cfg) }); err != nil {
		return nil, nil, err
	}
	return priv.Bytes(), pub.Bytes(), nil
}

func armored(buf *bytes.Buffer, kind string, write func(io.Writer) error) error {
	w, err := armor.Encode(buf, kind, nil)
	if err != nil {
		return err
	}
	if err := write(w); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	buf.WriteByte('\n')
	return nil
}

// validNow returns the key that signs at now (the newest valid signing
// subkey, else a primary that may sign), refusing one that hosts would
// refuse at now, or within
// MinValidity of it: revoked, expired, not yet valid, or expiring soon.
// The signing key's expiry is its own or its primary key's, whichever is
// sooner.
func validNow(file string, e *openpgp.Entity, now time.Time) (openpgp.Key, error) {
	fpr := fmt.Sprintf("%X", e.PrimaryKey.Fingerprint)
	day := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }
	for _, r := range e.Revocations {
		why := ""
		if r.RevocationReasonText != "" {
			why = " (" + r.RevocationReasonText + ")"
		}
		return openpgp.Key{}, fmt.Errorf("signing key %s (%s): revoked on %s%s; make a new one: pglease-gen keygen --out FILE", file, fpr, day(r.CreationTime), why)
	}
	if e.PrimaryKey.CreationTime.After(now) {
		return openpgp.Key{}, fmt.Errorf("signing key %s (%s): created on %s, after now (%s): check this machine's clock", file, fpr, day(e.PrimaryKey.CreationTime), day(now))
	}
	k, ok := e.SigningKey(now)
	if !ok {
		end := expiry(e.PrimaryKey, primarySig(e))
		if !end.IsZero() && !end.After(now) {
			return openpgp.Key{}, fmt.Errorf("signing key %s (%s): expired on %s, before now (%s): extend it (gpg --quick-set-expire %s 2y, then its signing subkeys: gpg --quick-set-expire %s 2y '*') or make a new one", file, fpr, day(end), day(now), fpr, fpr)
		}
		if len(e.Subkeys) > 0 {
			return openpgp.Key{}, fmt.Errorf("signing key %s (%s): has no key valid for signing now (%s): its signing subkeys expired or were revoked, and the primary key only certifies; add one (gpg --quick-add-key %s ed25519 sign 2y) or extend one (gpg --quick-set-expire %s 2y SUBKEY-FINGERPRINT)", file, fpr, day(now), fpr, fpr)
		}
		return openpgp.Key{}, fmt.Errorf("signing key %s (%s): has no key valid for signing now (%s): expired, revoked or not a signing key", file, fpr, day(now))
	}
	end := expiry(e.PrimaryKey, primarySig(e))
	fix := fmt.Sprintf("gpg --quick-set-expire %s 2y", fpr)
	if sub := expiry(k.PublicKey, k.SelfSignature); k.PublicKey != e.PrimaryKey && !sub.IsZero() && (end.IsZero() || sub.Before(end)) {
		end = sub
		fix = fmt.Sprintf("its signing subkey %X expires first: gpg --quick-set-expire %s 2y %X, or add a new one: gpg --quick-add-key %s ed25519 sign 2y", k.PublicKey.Fingerprint, fpr, k.PublicKey.Fingerprint, fpr)
	}
	if !end.IsZero() && end.Before(now.Add(MinValidity)) {
		return openpgp.Key{}, fmt.Errorf("signing key %s (%s): expires on %s, within %d days of now (%s); the repositories are good only while their key is (hosts refuse them after it expires): extend it (%s) and build again",
			file, fpr, day(end), int(MinValidity.Hours()/24), day(now), fix)
	}
	return k, nil
}

func primarySig(e *openpgp.Entity) *packet.Signature {
	sig, _ := e.PrimarySelfSignature()
	return sig
}

// expiry is when a key with self-signature sig expires; zero: never.
func expiry(k *packet.PublicKey, sig *packet.Signature) time.Time {
	if sig == nil || sig.KeyLifetimeSecs == nil || *sig.KeyLifetimeSecs == 0 {
		return time.Time{}
	}
	return k.CreationTime.Add(time.Duration(*sig.KeyLifetimeSecs) * time.Second)
}

// Open loads the key a build signs with: the armored private key in
// keyFile, or the key gpgID of gpg's keyring (at most one of them), its
// passphrase, if any, in the environment variable PassphraseEnv. Neither
// given: nil, an unsigned build. when is the signatures' time, now the
// clock's (a gpg key must be valid at both).
func Open(keyFile, gpgID string, when, now time.Time) (*Signer, error) {
	pass, set := os.LookupEnv(PassphraseEnv)
	switch {
	case keyFile != "" && gpgID != "":
		return nil, errors.New("a key file and a gpg key both given: keep one")
	case gpgID != "":
		var p []byte
		if set {
			p = []byte(pass)
		}
		return LoadGPG(gpgID, p, when, now)
	case keyFile != "":
		return Load(keyFile, []byte(pass), when)
	}
	return nil, nil
}
