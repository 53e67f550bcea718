package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/pglease/pglease-gen/internal/deb"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/suite"
)

// aptRepoInContainer is where the apt repository is copied.
const aptRepoInContainer = "/srv/pg_lease-apt"

// FindAptRepo accepts an apt repository (a directory with dists/) or the
// output of pglease-gen build, whose apt/ it picks.
func FindAptRepo(dir string) (string, error) {
	for _, d := range []string{dir, filepath.Join(dir, deb.RepoDir)} {
		if m, _ := filepath.Glob(filepath.Join(d, "dists", "*", "Release")); len(m) > 0 {
			return d, nil
		}
	}
	return "", fmt.Errorf("%s is not an apt repository (no dists/CODENAME/Release in it or in %s/%s): run pglease-gen build first", dir, dir, deb.RepoDir)
}

// AptSuites are the suites (codenames) of an apt repository, signed or
// not: the signed ones must have an InRelease.
func AptSuites(repo string) []string {
	m, _ := filepath.Glob(filepath.Join(repo, "dists", "*", "Release"))
	var out []string
	for _, f := range m {
		out = append(out, filepath.Base(filepath.Dir(f)))
	}
	return out
}

// debianTarget is the release whose debs a Debian or Ubuntu root file
// system takes: its own (VERSION_CODENAME) when the model builds for it,
// else, on a development release (sid is forky/sid), the newest release
// of the same OS the model has.
func debianTarget(ctx context.Context, root suite.Executor) (model.Distro, string, error) {
	out, err := Output(ctx, root, "sh", "-c", `. /etc/os-release && echo "$ID $VERSION_CODENAME"`)
	if err != nil {
		return model.Distro{}, "", err
	}
	id, codename, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if d, ok := model.DistroNamed(codename); ok && d.Format == model.Deb {
		return d, codename, nil
	}
	var newest model.Distro
	for _, d := range model.OfFormat(model.Distros, model.Deb) {
		if strings.EqualFold(d.OS, id) {
			newest = d
		}
	}
	if newest.Name == "" {
		return model.Distro{}, "", fmt.Errorf("the image is %s %s, which no distribution of the model is; pass --distro", id, codename)
	}
	return newest, codename, nil
}

// AptInstall is the installer of the deb install proof: it copies the apt
// repository into the container, adds it to apt's sources and runs
// `apt-get install -y postgresql-N-pg-lease`, which must pull in
// postgresql-N from the image's own repository. Its check, after the
// suites, runs `apt-get purge -y postgresql-N-pg-lease` and fails if the
// package or any of its files is still there.
//
// Given the public key of a signed build (FindKey), apt checks the
// repository's signature (Signed-By, no trusted=yes).
//
// The suite is distro's; an empty distro means the image's own release
// (debianTarget). With a key, the suite's InRelease must also verify with
// the image's gpgv with exit status 0 (installed from the image's own
// repository where the release's minimal system lacks it), and its
// Release.gpg with the image's sqv where it has one.
func AptInstall(ext model.Extension, repo string, key []byte, distro string) Installer {
	return func(ctx context.Context, t Target, stage func(string)) (func(context.Context) error, error) {
		root := t.Root()
		d, ok := model.DistroNamed(distro)
		if distro == "" {
			var own string
			var err error
			if d, own, err = debianTarget(ctx, root); err != nil {
				return nil, err
			}
			if own != d.Name {
				stage(fmt.Sprintf("the image's release %s is not built for: the %s suite", own, d.Name))
			}
		} else if !ok || d.Format != model.Deb {
			return nil, fmt.Errorf("--distro %s is not a Debian or Ubuntu release of the model", distro)
		}
		if _, err := os.Stat(filepath.Join(repo, "dists", d.Name, "Release")); err != nil {
			return nil, fmt.Errorf("%s has no suite %s (it has %s): build it with pglease-gen build --distro %s", repo, d.Name, strings.Join(AptSuites(repo), ", "), d.Name)
		}
		pkg := model.Packages.For(d)
		if err := uploadTree(ctx, t, repo, aptRepoInContainer); err != nil {
			return nil, err
		}
		sources := deb.Sources(pkg, ext.DebSource(), "file:"+aptRepoInContainer, key)
		if err := uploadFile(ctx, t, "/etc/apt/sources.list.d", ext.SourcesFile(), sources); err != nil {
			return nil, err
		}
		apt := func(ctx context.Context, args ...string) ([]byte, error) {
			argv := append([]string{"env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-q", "-y",
				"-o", "Dpkg::Options::=--force-confold", "-o", "APT::Sandbox::User=root"}, args...)
			return Output(ctx, root, argv...)
		}
		name := ext.DebPackage(t.Layout().Major)
		stage("apt-get update (" + d.Name + ")")
		if _, err := apt(ctx, "update"); err != nil {
			return nil, err
		}
		if key != nil {
			if err := verifySuite(ctx, t, apt, path.Join(aptRepoInContainer, "dists", d.Name), key, stage); err != nil {
				return nil, err
			}
		}
		stage("apt-get install -y " + name + signedWord(key))
		if _, err := apt(ctx, "install", "--no-install-recommends", name); err != nil {
			return nil, err
		}
		if _, err := Output(ctx, root, "dpkg-query", "-W", name, model.DebServerPackage(t.Layout().Major)); err != nil {
			return nil, fmt.Errorf("after apt-get install: %w", err)
		}
		// the release's own deb: ~trixie (Pigsty's form) or .pgdg130+1 (PGDG's)
		if v, err := Output(ctx, root, "dpkg-query", "-W", "-f", "${Version}", name); err != nil ||
			!(strings.HasSuffix(string(v), "~"+d.Name) || strings.HasSuffix(string(v), ".pgdg"+d.PGDG+"+1")) {
			return nil, fmt.Errorf("%s is installed at version %q, not %s's (%v)", name, v, d.Name, err)
		}
		out, err := Output(ctx, root, "dpkg-query", "-L", name)
		if err != nil {
			return nil, err
		}
		var files []string
		for _, f := range strings.Fields(string(out)) {
			if _, _, code, err := root.Run(ctx, []string{"test", "-f", f}); err == nil && code == 0 {
				files = append(files, f)
			}
		}
		control := path.Join(t.Layout().ExtensionDir(), ext.ControlFile())
		if !slices.Contains(files, control) {
			return nil, fmt.Errorf("%s does not install %s; it installs:\n%s", name, control, out)
		}
		return func(ctx context.Context) error {
			stage("apt-get purge -y " + name)
			if _, err := apt(ctx, "purge", name); err != nil {
				return err
			}
			if _, _, code, err := root.Run(ctx, []string{"dpkg-query", "-W", "-f", "${db:Status-Status}", name}); err == nil && code == 0 {
				st, _ := Output(ctx, root, "dpkg-query", "-W", "-f", "${db:Status-Status}", name)
				if s := strings.TrimSpace(string(st)); s != "not-installed" && s != "" {
					return fmt.Errorf("%s is %s after apt-get purge", name, s)
				}
			}
			return noneLeft(ctx, root, "apt-get purge", files)
		}, nil
	}
}

// verifySuite checks a signed suite with the image's own verifiers:
// GnuPG's gpgv on InRelease (exit status 0; apt goes on after gpgv's exit
// status 2 when it saw a good signature, repository tools do not) and,
// where the image has it, Sequoia's sqv on Release.gpg.
func verifySuite(ctx context.Context, t Target, apt func(context.Context, ...string) ([]byte, error), dir string, key []byte, stage func(string)) error {
	root := t.Root()
	if _, _, code, err := root.Run(ctx, []string{"sh", "-c", "command -v gpgv"}); err != nil {
		return err
	} else if code != 0 {
		stage("apt-get install -y gpgv (the image's own)")
		if _, err := apt(ctx, "install", "--no-install-recommends", "gpgv"); err != nil {
			return fmt.Errorf("installing the image's gpgv to check the suite: %w", err)
		}
	}
	bin, err := dearmor(key)
	if err != nil {
		return err
	}
	const keyDir = "/tmp/pg_lease-verify"
	if err := uploadFile(ctx, t, keyDir, "key.gpg", bin); err != nil {
		return err
	}
	if err := uploadFile(ctx, t, keyDir, "key.asc", key); err != nil {
		return err
	}
	stage("gpgv " + path.Join(dir, "InRelease"))
	out, errOut, code, err := root.Run(ctx, []string{"gpgv", "--keyring", keyDir + "/key.gpg", path.Join(dir, "InRelease")})
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("gpgv %s/InRelease exits %d:\n%s%s", dir, code, out, errOut)
	}
	if _, _, code, err := root.Run(ctx, []string{"sh", "-c", "command -v sqv"}); err == nil && code == 0 {
		stage("sqv " + path.Join(dir, "Release.gpg"))
		out, errOut, code, err := root.Run(ctx, []string{"sqv", "--keyring", keyDir + "/key.asc", path.Join(dir, "Release.gpg"), path.Join(dir, "Release")})
		if err != nil {
			return err
		}
		if code != 0 {
			return fmt.Errorf("sqv %s/Release.gpg exits %d:\n%s%s", dir, code, out, errOut)
		}
	}
	return Must(ctx, root, "rm", "-rf", keyDir)
}

// dearmor is an armored OpenPGP block's binary body (gpgv's keyring).
func dearmor(armored []byte) ([]byte, error) {
	b, err := armor.Decode(bytes.NewReader(armored))
	if err != nil {
		return nil, fmt.Errorf("the build's public key is not armored: %w", err)
	}
	return io.ReadAll(b.Body)
}
