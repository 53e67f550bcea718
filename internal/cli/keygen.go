package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/sign"
)

type keygenCmd struct {
	out, name, email string
	bits             int
}

func newKeygen() *cobra.Command {
	c := &keygenCmd{}
	cmd := &cobra.Command{
		Use:   "keygen --out FILE",
		Short: "Make an OpenPGP signing key for build --sign-key (for tests and first use)",
		Long: "Write a new RSA signing key, armored, to FILE (mode 0600; an existing file is\n" +
			"refused) and its public half to FILE.pub. With " + sign.PassphraseEnv + " set, the\n" +
			"private key is protected by that passphrase. The key does not expire (an expiry\n" +
			"made by the OpenPGP library is a critical subpacket that rpm refuses); for a\n" +
			"release key kept for years, with an expiry and signing subkeys, make it with gpg\n" +
			"on an offline machine.",
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
			for _, f := range []string{c.out, c.out + ".pub"} {
				if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("%s exists: keygen never overwrites a key; choose another --out", f)
				}
			}
			priv, pub, err := sign.Generate(c.name, c.email, c.bits, []byte(os.Getenv(sign.PassphraseEnv)), time.Now().UTC().Truncate(time.Second))
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
	return cmd
}
