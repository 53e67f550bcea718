package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/pglease/pglease-gen/internal/docker"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/suite"
)

// CopyFiles is the installer of a plain run: it renders the extension and
// copies its control file and install script into the extension directory.
func CopyFiles(ext model.Extension, src fs.FS) Installer {
	return func(ctx context.Context, t Target, _ func(string)) (func(context.Context) error, error) {
		files, err := render.InstallFiles(ext, src)
		if err != nil {
			return nil, err
		}
		var tb docker.Tar
		for _, n := range files.Names() {
			if err := tb.File(n, 0o644, files[n]); err != nil {
				return nil, err
			}
		}
		archive, err := tb.Bytes()
		if err != nil {
			return nil, err
		}
		l := t.Layout()
		if err := Must(ctx, t.Root(), "test", "-d", l.ExtensionDir()); err != nil {
			return nil, fmt.Errorf("there is no %s: is this a %s-layout PostgreSQL %d? (%w)", l.ExtensionDir(), l.Name, l.Major, err)
		}
		return nil, errPermission(t.Upload(ctx, l.ExtensionDir(), archive), l.ExtensionDir())
	}
}

// tarDir packs the directory dir (its contents, not dir itself).
func tarDir(dir string) ([]byte, error) {
	var tb docker.Tar
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		if d.IsDir() {
			return tb.Dir(filepath.ToSlash(rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return tb.File(filepath.ToSlash(rel), 0o644, b)
	})
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	return tb.Bytes()
}

// uploadFile writes one file into dir on the target, making dir.
func uploadFile(ctx context.Context, t Target, dir, name string, body []byte) error {
	var tb docker.Tar
	if err := tb.File(name, 0o644, body); err != nil {
		return err
	}
	b, err := tb.Bytes()
	if err != nil {
		return err
	}
	if err := Must(ctx, t.Root(), "mkdir", "-p", dir); err != nil {
		return err
	}
	return t.Upload(ctx, dir, b)
}

// noneLeft fails when any of files still exists on the target after what
// removed the package.
func noneLeft(ctx context.Context, root suite.Executor, what string, files []string) error {
	var left []string
	for _, f := range files {
		if _, _, code, err := root.Run(ctx, []string{"test", "-e", f}); err != nil {
			return err
		} else if code == 0 {
			left = append(left, f)
		}
	}
	if len(left) > 0 {
		return errors.New(what + " left files behind: " + strings.Join(left, " "))
	}
	return nil
}

// FindKey returns the public key of a signed build: the key file in dir
// (the output of pglease-gen build) or beside the repository tree found in
// it; nil when the build is unsigned. A key beside a repository that
// carries no signature (signed names its signature file, relative to
// repo) is an error: the two do not belong to one build.
func FindKey(dir, repo, signed string, ext model.Extension) ([]byte, error) {
	for _, d := range []string{dir, filepath.Dir(repo)} {
		b, err := os.ReadFile(filepath.Join(d, ext.RPMKeyFile()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(filepath.Join(repo, signed)); err != nil {
			return nil, fmt.Errorf("%s has a public key (%s) but no %s: rebuild it with pglease-gen build, signed or not", dir, ext.RPMKeyFile(), signed)
		}
		return b, nil
	}
	return nil, nil
}

// KeyIDs are the long key ids of an armored public key (the primary key
// and its subkeys), as rpm prints the id of the key that signed.
func KeyIDs(key []byte) ([]string, error) {
	ents, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(key))
	if err != nil || len(ents) != 1 {
		return nil, fmt.Errorf("the build's public key is not one armored OpenPGP key (%v)", err)
	}
	ids := []string{fmt.Sprintf("%016x", ents[0].PrimaryKey.KeyId)}
	for _, s := range ents[0].Subkeys {
		ids = append(ids, fmt.Sprintf("%016x", s.PublicKey.KeyId))
	}
	return ids, nil
}

func signedWord(key []byte) string {
	if key == nil {
		return " (unsigned build: signatures not checked)"
	}
	return " (signatures checked)"
}

// uploadTree copies the directory tree dir of this machine to dst on the
// target (a package repository, for an installer).
func uploadTree(ctx context.Context, t Target, dir, dst string) error {
	archive, err := tarDir(dir)
	if err != nil {
		return err
	}
	if err := Must(ctx, t.Root(), "mkdir", "-p", dst); err != nil {
		return err
	}
	return t.Upload(ctx, dst, archive)
}

// ImageVolume is the installer of CloudNativePG's image volumes: the
// image's files (a tar of share/ and licenses/, as taken from the image)
// unpacked at dir, where a Cluster mounts the image, and nothing in the
// server's own directories; the server finds the extension only through
// its extension_control_path (ImageVolumeSetting).
func ImageVolume(files []byte, dir string) Installer {
	return func(ctx context.Context, t Target, stage func(string)) (func(context.Context) error, error) {
		stage("the image's files at " + dir)
		if err := Must(ctx, t.Root(), "mkdir", "-p", dir); err != nil {
			return nil, err
		}
		return nil, t.Upload(ctx, dir, files)
	}
}

// ImageVolumeSetting is the setting CloudNativePG gives a server for an
// extension image mounted at dir.
func ImageVolumeSetting(dir string) string {
	return "extension_control_path='$system:" + dir + "/share'"
}
