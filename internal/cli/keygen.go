package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/sign"
)

type keygenCmd struct {
	out, name, email, expire string
	bits                     int
}

func newKeygen() *cobra.Command {
	c := &keygenCmd{}
	cmd := &cobra.Command{
		Use:   "keygen --out FILE",
		Short: "Make an OpenPGP signing key for build --sign-key (for tests and first use)",
		Long: "Write a new RSA signing key, armored, to FILE (mode 0600; an existing file is\n" +
			"refused) and its public half to FILE.pub. With " + sign.PassphraseEnv + " set, the\n" +
			"private key is protected by that passphrase. For a release key kept for years,\n" +
			"prefer making it with gpg on an offline machine.",
		Example: "  pglease-gen keygen --out build/test-key.asc\n" +
			"  pglease-gen build --sign-key build/test-key.asc",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c.out == "" {
				return errors.New("say where to write the key: --out FILE")
			}
			if c.bits < 2048 || c.bits > 8192 {
				return fmt.Errorf("--bits %d: use 2048 to 8192 (3072 is the default)", c.bits)
			}
			life, err := keyLife(c.expire)
			if err != nil {
				return err
			}
			for _, f := range []string{c.out, c.out + ".pub"} {
				if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("%s exists: keygen never overwrites a key; choose another --out", f)
				}
			}
			priv, pub, err := sign.Generate(c.name, c.email, c.bits, []byte(os.Getenv(sign.PassphraseEnv)), time.Now().UTC().Truncate(time.Second), life)
			if err != nil {
				return err
			}
			if err := os.WriteFile(c.out+".pub", pub, 0o644); err != nil {
				return err
			}
			f, err := os.OpenFile(c.out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return err
			}
			if _, err := f.Write(priv); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (private, 0600) and %s.pub\n", c.out, c.out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.out, "out", "", "file for the private key (the public key goes to FILE.pub)")
	f.StringVar(&c.name, "name", model.PgLease.Name+" packages", "the key's user id name")
	f.StringVar(&c.email, "email", "packages@pglease.invalid", "the key's user id email")
	f.IntVar(&c.bits, "bits", 3072, "RSA key size")
	f.StringVar(&c.expire, "expire", "2y", "how long the key is valid: Ny or Nd (extend it later with gpg --quick-set-expire), or never")
	return cmd
}

// keyLife reads --expire: N years (of 365 days) or N days, at least one
// day, or never (0).
func keyLife(s string) (time.Duration, error) {
	if s == "never" {
		return 0, nil
	}
	if s == "" {
		return 0, errors.New("--expire is empty: give Ny (1 to 100 years), Nd (days) or never")
	}
	day := 24 * time.Hour
	unit := map[byte]time.Duration{'y': 365 * day, 'd': day}[s[len(s)-1:][0]]
	if len(s) >= 2 && unit != 0 {
		if n, err := strconv.Atoi(s[:len(s)-1]); err == nil && n >= 1 && n <= 100*int(365*day/unit) {
			return time.Duration(n) * unit, nil
		}
	}
	return 0, fmt.Errorf("--expire %q: give Ny (1 to 100 years), Nd (days) or never", s)
}
