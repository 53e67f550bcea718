package sign

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
)

// GPGPrefix starts a --sign-with value that names a key of the user's
// GnuPG: gpg:KEYID.
const GPGPrefix = "gpg:"

// gpgKey signs through gpg with one key, as gpg --local-user FPR! does:
// gpg asks its agent, which may hold the key on a smartcard or ask for a
// passphrase.
type gpgKey struct {
	fpr        string // the signing key's fingerprint, which gpg takes with ! as exactly that key
	passphrase []byte // given: gpg is told it (loopback pinentry); none: the agent asks or knows
}

// LoadGPG signs with key id of the user's GnuPG (GNUPGHOME, its agent,
// a smartcard) through gpg, for signatures dated when, at the making of
// the signing key if that is later (as LoadAt); the key is checked at now
// as LoadAt checks a file's. gpg signs once here, and the signature must
// verify with the public key gpg exports, so that a locked card or an
// agent that cannot ask for the passphrase fails before the build.
func LoadGPG(id string, passphrase []byte, when, now time.Time) (*Signer, error) {
	label := GPGPrefix + id
	if id == "" || strings.ContainsAny(id, " \t\n") || strings.HasPrefix(id, "-") {
		return nil, fmt.Errorf("--sign-with %s: name a key as gpg does: its fingerprint (gpg --list-secret-keys), a key id or an address", label)
	}
	if _, err := exec.LookPath("gpg"); err != nil {
		return nil, fmt.Errorf("--sign-with %s: needs gpg (apt-get install gnupg): %v", label, err)
	}
	pub, err := runGPG(nil, nil, "--export", id)
	if err != nil {
		return nil, fmt.Errorf("--sign-with %s: %w", label, err)
	}
	ents, err := openpgp.ReadKeyRing(bytes.NewReader(pub))
	switch {
	case err != nil || len(ents) == 0:
		return nil, fmt.Errorf("--sign-with %s: gpg has no public key %s (gpg --list-secret-keys lists the keys it can sign with)", label, id)
	case len(ents) > 1:
		return nil, fmt.Errorf("--sign-with %s: names %d keys in gpg's keyring; give the fingerprint", label, len(ents))
	}
	e := ents[0]
	k, err := validNow(label, e, now)
	if err != nil {
		return nil, err
	}
	notBefore := keyMade(e, k)
	if when.Before(notBefore) {
		when = notBefore
	}
	s := &Signer{entity: e, pub: k.PublicKey, when: when, notBefore: notBefore, gpg: &gpgKey{fpr: fmt.Sprintf("%X", k.PublicKey.Fingerprint), passphrase: passphrase}}
	probe := []byte("pglease-gen: can gpg sign with this key?\n")
	sig, err := s.Detached(probe)
	if err != nil {
		return nil, fmt.Errorf("--sign-with %s: %w", label, err)
	}
	if _, err := openpgp.CheckDetachedSignature(openpgp.EntityList{e}, bytes.NewReader(probe), bytes.NewReader(sig), nil); err != nil {
		return nil, fmt.Errorf("--sign-with %s: gpg's signature does not verify with the key it exports: %v", label, err)
	}
	return s, nil
}

// sign runs gpg over data with the key, dated when (gpg's clock frozen
// there), with mode's options (--detach-sign, --armor, --clearsign).
func (g *gpgKey) sign(when time.Time, data []byte, mode ...string) ([]byte, error) {
	args := []string{"--local-user", g.fpr + "!", "--digest-algo", "SHA256", "--faked-system-time", fmt.Sprintf("%d!", when.Unix())}
	return runGPG(data, g.passphrase, append(args, mode...)...)
}

// runGPG runs gpg in batch mode with stdin, the passphrase (if any) on a
// pipe of its own, and returns its output; an error carries what gpg said.
func runGPG(stdin, passphrase []byte, args ...string) ([]byte, error) {
	all := []string{"--batch", "--no-tty", "--yes", "--quiet"}
	var extra []*os.File
	if passphrase != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		defer r.Close()
		go func() {
			w.Write(passphrase)
			w.Close()
		}()
		extra = append(extra, r)
		all = append(all, "--pinentry-mode", "loopback", "--passphrase-fd", "3")
	}
	c := exec.Command("gpg", append(all, args...)...)
	c.Stdin = bytes.NewReader(stdin)
	c.ExtraFiles = extra
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		said := strings.TrimSpace(errb.String())
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("gpg %s failed (exit %d): %s", strings.Join(args, " "), ee.ExitCode(), said)
		}
		return nil, fmt.Errorf("gpg: %w", err)
	}
	return out.Bytes(), nil
}
